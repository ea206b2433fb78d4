// A vision projector (llama.cpp's "mmproj"): the encoder that turns an image into embeddings
// the text model reads in place of tokens, and what the rest of loom needs to know to place
// them. One implementation per projector family (llama.cpp's clip projector_type): Gemma 3's
// SigLIP + average pool ("gemma3"), Gemma 4's ("gemma4v"), Qwen3.5's vision transformer with
// patch merging ("qwen3vl_merger"). The file's reader is loadProjector (projector-file.ts).
import type { Kernels } from '../../kernels/index.js';

/** A decoded image: 8-bit RGB, row-major, [height, width, 3] (alpha dropped, as stb_image's 3-channel load). */
export interface RgbImage {
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array;
}

/** An image made ready for its encoder: resized (and tiled) and normalized as llama.cpp does for the family. */
export interface PreparedImage {
  /** normalized pixels at the size the encoder runs on, laid out as llama.cpp's clip_image_f32
   *  (interleaved RGB, [height, width, 3]) */
  readonly pixels: Float32Array;
  readonly width: number;
  readonly height: number;
  /** embeddings (and so text-sequence positions) the image takes between its begin and end markers */
  readonly numTokens: number;
  /** the grid those tokens form, rows × cols = numTokens (Qwen's M-RoPE positions read it) */
  readonly gridRows: number;
  readonly gridCols: number;
  /** pan and scan (a Gemma 3 folder that asks for it): crops of the image, each read as an
   *  image of its own after this one, with the projector's panAndScanText around them */
  readonly crops?: readonly PreparedImage[];
}

/** The words around an image that has crops (transformers' Gemma3Processor): before + image + between + crops joined by separator. */
export interface PanAndScanText {
  readonly before: string;
  readonly between: string;
  readonly separator: string;
}

export type ProjectorKind = 'gemma3' | 'gemma4v' | 'qwen3vl';

export interface VisionProjector {
  /** the file (or folder) it was read from, for messages */
  readonly source: string;
  readonly kind: ProjectorKind;
  /** width of each embedding it writes: the text model's hidden size */
  readonly outputSize: number;
  /** text around an image's embeddings in the prompt, tokenized with special tokens
   *  (llama.cpp's img_beg / img_end: "<start_of_image>" / "<end_of_image>" for Gemma 3) */
  readonly imageBegin: string;
  readonly imageEnd: string;
  /** an image's tokens attend to each other both ways (llama.cpp's mtmd_decode_use_non_causal) */
  readonly nonCausalImage: boolean;
  /** 'linear': an image's tokens take consecutive positions like text; 'mrope': Qwen's
   *  (t, h, w) positions per token, and the image advances the text position by max(rows, cols) */
  readonly positions: 'linear' | 'mrope';
  /** set when prepare may give an image crops (PreparedImage.crops) */
  readonly panAndScanText?: PanAndScanText;
  /** resize, tile and normalize a decoded image as llama.cpp's preprocessor for this family does */
  prepare(image: RgbImage): PreparedImage;
  /** the images' embeddings, [numTokens, outputSize] each, in order; on the compute threads */
  encode(images: readonly PreparedImage[], kernels: Kernels): Float32Array[];
}
