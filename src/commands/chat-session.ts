// A terminal conversation's state: the system prompt and the turns so far (with the images
// attached to each user message), turned into the next prompt. A model with a chat template
// gets messages through it; one without gets the transcript as plain text to continue. The
// oldest turns go first when the context fills. Images go before their message's text (as
// Ollama places a message's images), one IMAGE_MARKER each; a prompt with images is handed to
// the pipeline unrendered (it places the images), one without as token ids.
import type { LLM } from '../llm.js';
import { IMAGE_MARKER } from '../pipeline/image-input.js';
import type { ImageInput } from '../pipeline/image-input.js';
import type { PromptInput } from '../pipeline/prompt.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';

interface Turn {
  readonly user: string;
  readonly images: readonly ImageInput[];
  readonly reply: string;
}

/** the next prompt, and its text tokens (an image's tokens are the projector's to count) */
export interface SessionPrompt {
  readonly prompt: PromptInput;
  readonly textTokens: number;
  readonly images: number;
}

const withMarkers = (t: { user: string; images: readonly ImageInput[] }): string => IMAGE_MARKER.repeat(t.images.length) + t.user;

export class ChatSession {
  system: string | undefined;
  private turns: Turn[] = [];

  constructor(
    private readonly llm: LLM,
    /** false: the model has no chat template, so the transcript is continued as text */
    readonly templated: boolean,
    system?: string,
  ) {
    this.system = system;
  }

  clear(): void {
    this.turns = [];
  }

  get length(): number {
    return this.turns.length;
  }

  record(user: string, reply: string, images: readonly ImageInput[] = []): void {
    this.turns.push({ user, images, reply });
  }

  /**
   * The prompt for `user` (with `images`) after the kept turns, dropping the oldest turns until
   * `room` tokens are left for the reply; undefined when even the message alone does not fit.
   * With images the fit is judged on the text's tokens (the pipeline refuses what still overflows).
   */
  prompt(user: string, images: readonly ImageInput[], room: number): SessionPrompt | undefined {
    const limit = this.llm.engine.info.maxModelLen - room;
    const next = { user, images, reply: '' };
    for (let keep = this.turns.length; keep >= 0; keep--) {
      const kept = this.turns.slice(this.turns.length - keep);
      const ids = this.render(kept, next);
      if (ids.length > limit) continue;
      this.turns = kept;
      const all = [...kept.flatMap((t) => t.images), ...images];
      if (all.length === 0) return { prompt: ids, textTokens: ids.length, images: 0 };
      return { prompt: this.withImages(kept, next, all), textTokens: ids.length, images: all.length };
    }
    return undefined;
  }

  private messages(turns: readonly Turn[], next: Turn): ChatMessage[] {
    const messages: ChatMessage[] = this.system ? [{ role: 'system', content: this.system }] : [];
    for (const t of turns) messages.push({ role: 'user', content: withMarkers(t) }, { role: 'assistant', content: t.reply });
    messages.push({ role: 'user', content: withMarkers(next) });
    return messages;
  }

  private transcript(turns: readonly Turn[], next: Turn): string {
    return [this.system, ...turns.map((t) => withMarkers(t) + t.reply), withMarkers(next)].filter((t) => t).join('\n');
  }

  private render(turns: readonly Turn[], next: Turn): number[] {
    if (!this.templated) return this.llm.model.tokenizer.encode(this.transcript(turns, next), { addSpecial: true });
    return this.llm.chatPromptIds(this.messages(turns, next));
  }

  private withImages(turns: readonly Turn[], next: Turn, images: readonly ImageInput[]): PromptInput {
    if (!this.templated) return { text: this.transcript(turns, next), images };
    return { messages: this.messages(turns, next), addGenerationPrompt: true, images };
  }
}
