// A terminal conversation's state: the system prompt and the turns so far, turned into the
// next prompt's ids. A model with a chat template gets messages through it; one without gets
// the transcript as plain text to continue. The oldest turns go first when the context fills.
import type { LLM } from '../llm.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';

interface Turn {
  readonly user: string;
  readonly reply: string;
}

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

  record(user: string, reply: string): void {
    this.turns.push({ user, reply });
  }

  /**
   * The ids of the prompt for `user` after the kept turns, dropping the oldest turns until
   * `room` tokens are left for the reply; undefined when even the message alone does not fit.
   */
  promptIds(user: string, room: number): number[] | undefined {
    const limit = this.llm.engine.info.maxModelLen - room;
    for (let keep = this.turns.length; keep >= 0; keep--) {
      const ids = this.render(this.turns.slice(this.turns.length - keep), user);
      if (ids.length <= limit) {
        this.turns = this.turns.slice(this.turns.length - keep);
        return ids;
      }
    }
    return undefined;
  }

  private render(turns: readonly Turn[], user: string): number[] {
    const tokenizer = this.llm.model.tokenizer;
    if (!this.templated) {
      const text = [this.system, ...turns.map((t) => t.user + t.reply), user].filter((t) => t).join('\n');
      return tokenizer.encode(text, { addSpecial: true });
    }
    const messages: ChatMessage[] = this.system ? [{ role: 'system', content: this.system }] : [];
    for (const t of turns) messages.push({ role: 'user', content: t.user }, { role: 'assistant', content: t.reply });
    messages.push({ role: 'user', content: user });
    return this.llm.chatPromptIds(messages);
  }
}
