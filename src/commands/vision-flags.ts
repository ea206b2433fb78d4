// --mmproj and the image limits, for every command that can read images (serve, generate, chat).
// The byte bound of one image is the server's --max-image-bytes (the APIs check it as they parse).
import { Option } from 'commander';
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import type { ModelConfig } from '../model/weights.js';
import { loadProjector } from '../model/vision/projector-file.js';
import { builtInProjector } from '../model/vision/folder-projector.js';
import type { LoadedProjector } from '../model/vision/projector-file.js';
import type { LoadOptions } from '../model/model-memory.js';
import { readFileSync } from 'node:fs';
import { DEFAULT_IMAGE_LIMITS } from '../pipeline/images.js';
import type { ImageLimits, ReadyImage, VisionContext } from '../pipeline/images.js';
import { IMAGE_MARKER } from '../pipeline/image-input.js';
import type { ImageInput } from '../pipeline/image-input.js';
import { numberOption } from './parse.js';

export interface VisionFlags {
  /** false: --no-mmproj */
  mmproj?: string | false;
  maxImagePixels: number;
  maxImagesPerRequest: number;
}

/** `limits`: the image limits too (commands that take images from others: serve, generate) */
export function addVisionFlags(cmd: Command, limits = true): Command {
  cmd.option('--mmproj <file>', "a vision projector (llama.cpp's mmproj GGUF) for the model: prompts may then carry images (a Hugging Face image-text folder needs none: its own vision tower is used)");
  cmd.option('--no-mmproj', "serve a Hugging Face image-text folder as text only (its vision tower is not loaded)");
  if (!limits) return cmd;
  return cmd
    .addOption(new Option('--max-image-pixels <n>', 'most pixels (width × height) of one image; larger ones are refused before they are decoded').default(DEFAULT_IMAGE_LIMITS.maxPixels).argParser(numberOption('max-image-pixels', true)))
    .addOption(new Option('--max-images-per-request <n>', 'most images in one request').default(DEFAULT_IMAGE_LIMITS.maxImages).argParser(numberOption('max-images-per-request', true)));
}

export function imageLimitsOf(flags: VisionFlags, maxBytes = DEFAULT_IMAGE_LIMITS.maxBytes): ImageLimits {
  if (flags.maxImagePixels < 1) throw new InvalidArgumentError(`--max-image-pixels must be at least 1, got ${flags.maxImagePixels}`);
  if (flags.maxImagesPerRequest < 1) throw new InvalidArgumentError(`--max-images-per-request must be at least 1, got ${flags.maxImagesPerRequest}`);
  return { maxBytes, maxPixels: flags.maxImagePixels, maxImages: flags.maxImagesPerRequest };
}

/** The projector to serve: --mmproj's file, else the model folder's own vision tower (none with --no-mmproj). */
export function projectorPath(flags: Pick<VisionFlags, 'mmproj'>, modelPath: string): string | undefined {
  return flags.mmproj === false ? undefined : (flags.mmproj ?? builtInProjector(modelPath));
}

/** This thread's copy of the projector at `path` (mapped): its layout and prepare; the engine loads its own. */
export function openProjector(path: string | undefined, textConfig: ModelConfig, load: LoadOptions): LoadedProjector | undefined {
  return path === undefined ? undefined : loadProjector(path, textConfig, { ...load, mlock: false });
}

/** The files of --image as the pipeline's inputs (a file that cannot be read is refused naming it). */
export function readImageFiles(files: readonly string[]): ImageInput[] {
  return files.map((file) => {
    try {
      return { bytes: readFileSync(file), param: `--image ${file}` };
    } catch (err) {
      throw new InvalidArgumentError(`--image ${file}: ${err instanceof Error ? err.message : String(err)}`, '--image');
    }
  });
}

/** As llama-mtmd-cli: a prompt without markers gets one per image, before its text. */
export function withImageMarkers(prompt: string, images: number): string {
  return images > 0 && !prompt.includes(IMAGE_MARKER) ? IMAGE_MARKER.repeat(images) + prompt : prompt;
}

/** A vision context that prepares each input once (a CLI command sizes its engine by the prompt, then runs it). */
export function preparedOnce(vision: VisionContext): VisionContext {
  const done = new Map<ImageInput, Promise<ReadyImage>>();
  return {
    ...vision,
    prepare(input) {
      let ready = done.get(input);
      if (!ready) done.set(input, (ready = vision.prepare(input)));
      return ready;
    },
  };
}
