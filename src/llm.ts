// loom as a library: the engine in a worker thread, text in and text out, no HTTP.
//   const llm = await LLM.load('model.gguf');
//   const { text } = await llm.generate('Once upon a time', { maxTokens: 32 });
//   for await (const piece of llm.stream('Hello', { signal })) process.stdout.write(piece.text);
import { InProcessEngineClient } from './engine/in-process-client.js';
import { createEngineCore } from './engine/create.js';
import type { EngineClient } from './engine/client.js';
import type { EngineOptions } from './engine/options.js';
import { resolveSamplingParams } from './engine/sampling-params.js';
import type { SamplingParamsInput } from './engine/sampling-params.js';
import { WorkerEngineClient } from './engine/worker-client.js';
import { ContextLengthExceededError } from './errors.js';
import { offlineFromEnv } from './model/hub.js';
import { loadModel } from './model/load.js';
import { resolveModelArg } from './model/model-arg.js';
import type { LoadedModel } from './model/load.js';
import { generate as runGeneration } from './server/generation.js';
import type { CompletionEvent, GenerationSummary } from './server/generation.js';
import { loadChatTemplate, renderChat } from './tokenizer/chat-template.js';
import type { ChatMessage } from './tokenizer/chat-template.js';

export interface LLMOptions extends Omit<EngineOptions, 'model'> {
  /** run the engine in a worker thread (default) or on this thread */
  readonly worker?: boolean;
  /** a Jinja chat template (or a file holding one) used by chat() instead of the model's own */
  readonly chatTemplate?: string;
}

export interface GenerateOptions extends Omit<SamplingParamsInput, 'n' | 'maxTokens'> {
  /** default: until the context is full */
  readonly maxTokens?: number;
  /** stop strings: the text ends before the first one */
  readonly stop?: readonly string[];
  readonly skipSpecialTokens?: boolean;
  /** aborts generation; the result so far is returned with finishReason 'abort' */
  readonly signal?: AbortSignal;
}

export interface StreamPiece {
  readonly text: string;
  readonly tokenIds: readonly number[];
  readonly finishReason?: CompletionEvent['finishReason'];
}

export interface GenerateResult {
  readonly text: string;
  readonly tokenIds: number[];
  readonly finishReason: CompletionEvent['finishReason'];
  readonly promptTokens: number;
  readonly completionTokens: number;
}

let nextId = 0;

export class LLM {
  private constructor(
    readonly engine: EngineClient,
    readonly model: LoadedModel,
    private readonly chatTemplate?: string,
  ) {}

  /**
   * `model`: a GGUF file, a Hugging Face folder, `hf:ORG/REPO[:FILE]`, or a cached model's
   * name; omitted, the built-in stories260K (said in one line on stderr).
   */
  static async load(model?: string, opts: LLMOptions = {}): Promise<LLM> {
    const { chatTemplate: templateArg, ...rest } = opts;
    const chatTemplate = templateArg === undefined ? undefined : loadChatTemplate(templateArg, 'chatTemplate');
    const { path } = await resolveModelArg(model, { offline: offlineFromEnv() });
    const loaded = loadModel(path);
    const engineOptions: EngineOptions = { ...rest, model: path };
    const engine = opts.worker === false ? new InProcessEngineClient(createEngineCore(engineOptions, loaded)) : await WorkerEngineClient.start(engineOptions);
    return new LLM(engine, loaded, chatTemplate);
  }

  /** Streams the completion of a prompt (text, or token ids). */
  async *stream(prompt: string | readonly number[], opts: GenerateOptions = {}): AsyncGenerator<StreamPiece> {
    const ids = typeof prompt === 'string' ? this.model.tokenizer.encode(prompt, { addSpecial: true }) : [...prompt];
    const room = this.engine.info.maxModelLen - ids.length;
    if (room < 1) throw new ContextLengthExceededError(`the prompt has ${ids.length} tokens; the context holds ${this.engine.info.maxModelLen}`);
    const { stop = [], skipSpecialTokens = true, signal, maxTokens, ...sampling } = opts;
    const summary: GenerationSummary = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, firstScheduledTime: undefined };
    const events = runGeneration(
      this.engine,
      this.model.tokenizer,
      {
        id: `llm-${nextId++}`,
        promptIds: ids,
        // resolved and checked here, before the engine sees it (it only asserts)
        params: resolveSamplingParams({ ...sampling, n: 1, maxTokens: Math.min(maxTokens ?? room, room) }, this.model.tokenizer.vocabSize),
        stop,
        skipSpecialTokens,
        signal: signal ?? new AbortController().signal,
      },
      summary,
    );
    let aborted = false;
    const onAbort = (): void => {
      aborted = true;
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const e of events) {
        yield { text: e.text, tokenIds: e.tokenIds, ...(e.finishReason && { finishReason: e.finishReason }) };
      }
      if (aborted) yield { text: '', tokenIds: [], finishReason: 'abort' };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** The whole completion of a prompt. */
  async generate(prompt: string | readonly number[], opts: GenerateOptions = {}): Promise<GenerateResult> {
    let text = '';
    const tokenIds: number[] = [];
    let finishReason: CompletionEvent['finishReason'] = 'abort';
    for await (const piece of this.stream(prompt, opts)) {
      text += piece.text;
      tokenIds.push(...piece.tokenIds);
      finishReason = piece.finishReason ?? finishReason;
    }
    const promptTokens = typeof prompt === 'string' ? this.model.tokenizer.encode(prompt, { addSpecial: true }).length : prompt.length;
    return { text, tokenIds, finishReason, promptTokens, completionTokens: tokenIds.length };
  }

  /** The prompt ids of a chat: the model's chat template applied to the messages. */
  chatPromptIds(messages: readonly ChatMessage[]): number[] {
    const text = renderChat(this.model.tokenizer, [...messages], { addGenerationPrompt: true, template: this.chatTemplate });
    return this.model.tokenizer.encode(text, { addSpecial: false, parseSpecial: true });
  }

  /** A chat turn: the model's chat template applied to the messages. */
  chat(messages: readonly ChatMessage[], opts: GenerateOptions = {}): Promise<GenerateResult> {
    return this.generate(this.chatPromptIds(messages), opts);
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}
