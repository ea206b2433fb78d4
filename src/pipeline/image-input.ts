// Images as the APIs hand them to the pipeline: the encoded bytes (JPEG, PNG, WebP, GIF) and
// where in the prompt each goes. As llama-server does, an API puts IMAGE_MARKER in the text
// (a chat message's content, or a text prompt) where an image goes; the n-th marker of the
// rendered prompt is the n-th image. The pipeline decodes, prepares and places them.

/** llama.cpp's mtmd default media marker (mtmd_default_marker()). */
export const IMAGE_MARKER = '<__media__>';

export interface ImageInput {
  /** the image file's bytes, as sent (base64 and data URLs already decoded) */
  readonly bytes: Uint8Array;
  /** the request field it came in (e.g. `messages[0].content[1].image_url`), for errors */
  readonly param: string;
}
