// A request's prompt as the pipeline takes it: text, token ids, or a chat (messages the
// model's chat template renders, with the template's variables: tools, kwargs). Every API
// maps its input onto one of these; the pipeline renders and tokenizes it.
import { InvalidArgumentError } from '../errors.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import type { TextCodec } from './context.js';
import type { ImageInput } from './image-input.js';

export interface ChatPrompt {
  readonly messages: readonly ChatMessage[];
  /** open an assistant turn after the messages (default true) */
  readonly addGenerationPrompt?: boolean;
  /** leave the final (assistant) message open so the model continues it (vLLM / HF transformers) */
  readonly continueFinalMessage?: boolean;
  /** extra template variables (tools, chat_template_kwargs) */
  readonly templateVars?: Readonly<Record<string, unknown>>;
  /** the images of the messages, in the order of their IMAGE_MARKERs in the contents (image-input.ts) */
  readonly images?: readonly ImageInput[];
}

/** A text prompt with images at its IMAGE_MARKERs (Ollama's generate `images`). */
export interface TextImagesPrompt {
  readonly text: string;
  readonly images: readonly ImageInput[];
}

export type PromptInput = string | readonly number[] | ChatPrompt | TextImagesPrompt;

export function isChatPrompt(p: PromptInput): p is ChatPrompt {
  return typeof p === 'object' && !Array.isArray(p) && 'messages' in p;
}

export function isTextImagesPrompt(p: PromptInput): p is TextImagesPrompt {
  return typeof p === 'object' && !Array.isArray(p) && 'text' in p && 'images' in p;
}

/** The chat rendered by the model's template, as text (tokenized with parseSpecial). */
export async function renderChatPrompt(text: TextCodec, p: ChatPrompt): Promise<string> {
  const addGenerationPrompt = p.addGenerationPrompt ?? true;
  const extra = p.templateVars;
  if (!p.continueFinalMessage) return text.render(p.messages, { addGenerationPrompt, extra });
  if (addGenerationPrompt) throw new InvalidArgumentError('Cannot set both `continue_final_message` and `add_generation_prompt` to True.', 'continue_final_message');
  const final = p.messages.at(-1);
  const rendered = await text.render(p.messages, { addGenerationPrompt: false, extra });
  // as transformers' apply_chat_template: cut the rendering right after the final message's content
  const content = final?.content.trim() ?? '';
  const at = content ? rendered.lastIndexOf(content) : -1;
  if (at < 0) throw new InvalidArgumentError('continue_final_message: the final message does not appear in the rendered chat template', 'messages');
  return rendered.slice(0, at + content.length);
}
