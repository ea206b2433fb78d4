// loom as a library: the engine in a worker thread, text in and text out, no HTTP. Every
// call goes through the request pipeline the server uses (src/pipeline/): resolved once,
// refused with the library's errors (ContextLengthExceededError, InvalidArgumentError).
//   const llm = await LLM.load('model.gguf');
//   const { text } = await llm.generate('Once upon a time', { maxTokens: 32 });
//   for await (const piece of llm.stream('Hello', { signal })) process.stdout.write(piece.text);
//   const vectors = await (await LLM.load('bge-small.gguf')).embed(['a text', 'another']);
import { InProcessEngineClient } from './engine/in-process-client.js';
import { createEngineCore, loadOptions } from './engine/create.js';
import type { EngineClient } from './engine/client.js';
import type { EngineOptions } from './engine/options.js';
import type { SamplingParamsInput } from './engine/sampling-params.js';
import { WorkerEngineClient } from './engine/worker-client.js';
import { offlineFromEnv } from './model/hub.js';
import { loadModel } from './model/load.js';
import { resolveModelArg } from './model/model-arg.js';
import type { LoadedModel } from './model/load.js';
import { loadProjector } from './model/vision/projector-file.js';
import { builtInProjector } from './model/vision/folder-projector.js';
import type { LoadedProjector } from './model/vision/projector-file.js';
import { inlineVision } from './pipeline/images.js';
import type { TextImagesPrompt } from './pipeline/prompt.js';
import { localContext } from './pipeline/context.js';
import type { PipelineContext } from './pipeline/context.js';
import { newSummary, runPrompt } from './pipeline/generate.js';
import type { CompletionEvent, GenerationSummary } from './pipeline/generate.js';
import type { PromptInput } from './pipeline/prompt.js';
import { resolveRequest } from './pipeline/request.js';
import { embed, rerank } from './pipeline/embed.js';
import type { EmbedInput, EmbedOptions, RerankResult } from './pipeline/embed.js';
import { loadChatTemplate, renderChat } from './tokenizer/chat-template.js';
import type { ChatMessage } from './tokenizer/chat-template.js';

export interface LLMOptions extends Omit<EngineOptions, 'model' | 'mmproj'> {
  /** a vision projector (mmproj GGUF); a Hugging Face image-text folder uses its own vision tower
   *  unless this is false */
  readonly mmproj?: string | false;
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

export class LLM {
  private readonly pipeline: PipelineContext;

  private constructor(
    readonly engine: EngineClient,
    readonly model: LoadedModel,
    private readonly chatTemplate?: string,
    /** this thread's copy of the vision projector (mmproj): its prepare and layout */
    private readonly projector?: LoadedProjector,
  ) {
    const ctx = localContext(engine, model.tokenizer, chatTemplate);
    this.pipeline = projector ? { ...ctx, vision: inlineVision(projector) } : ctx;
  }

  /**
   * `model`: a GGUF file, a Hugging Face folder, `hf:ORG/REPO[:FILE]`, or a cached model's
   * name; omitted, the built-in stories260K (said in one line on stderr).
   */
  static async load(model?: string, opts: LLMOptions = {}): Promise<LLM> {
    const { chatTemplate: templateArg, mmproj: mmprojArg, ...rest } = opts;
    const chatTemplate = templateArg === undefined ? undefined : loadChatTemplate(templateArg, 'chatTemplate');
    const { path } = await resolveModelArg(model, { offline: offlineFromEnv() });
    // with a worker, this thread's copy serves the config and tokenizer: the worker locks the weights
    const loaded = loadModel(path, { ...loadOptions(rest), ...(opts.worker !== false && { mlock: false }) });
    const mmproj = mmprojArg === false ? undefined : (mmprojArg ?? builtInProjector(path));
    const engineOptions: EngineOptions = { ...rest, model: path, ...(mmproj !== undefined && { mmproj }) };
    // the engine reads the projector's weights; this thread prepares images with its own mapping of the file
    const projector = mmproj !== undefined ? loadProjector(mmproj, loaded.config, { ...loadOptions(rest), mlock: false }) : undefined;
    const engine = opts.worker === false ? new InProcessEngineClient(createEngineCore(engineOptions, loaded)) : await WorkerEngineClient.start(engineOptions);
    return new LLM(engine, loaded, chatTemplate, projector);
  }

  /** Streams the completion of a prompt (text, token ids, or a chat the model's template renders; with images at their IMAGE_MARKERs: needs `mmproj`). */
  stream(prompt: PromptInput, opts: GenerateOptions = {}): AsyncGenerator<StreamPiece> {
    return this.run(prompt, opts, newSummary());
  }

  /** prompt → the pipeline (resolve once, then the engine) → pieces; `summary` is filled as it goes */
  private async *run(prompt: PromptInput, opts: GenerateOptions, summary: GenerationSummary): AsyncGenerator<StreamPiece> {
    const { stop = [], skipSpecialTokens = true, signal, maxTokens, ...sampling } = opts;
    const chat = typeof prompt === 'object' && 'messages' in prompt;
    const r = await resolveRequest(this.pipeline, {
      prompts: [prompt],
      promptParam: 'prompt',
      // a text prompt gets BOS where the model wants one; a rendered chat carries its own
      addSpecialTokens: !chat,
      // maxTokens is a cap: the completion stops where the context ends
      maxTokens: undefined,
      maxTokensParam: 'maxTokens',
      defaultMaxTokens: maxTokens ?? 'context',
      sampling: { ...sampling, n: 1 },
      stop,
      skipSpecialTokens,
      idPrefix: 'llm',
    });
    const events = runPrompt(this.pipeline, r, 0, signal ?? new AbortController().signal, summary);
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

  /** The whole completion of a prompt (text, token ids, or text with images at its IMAGE_MARKERs: needs `mmproj`). */
  generate(prompt: string | readonly number[] | TextImagesPrompt, opts: GenerateOptions = {}): Promise<GenerateResult> {
    return this.complete(prompt, opts);
  }

  private async complete(prompt: PromptInput, opts: GenerateOptions): Promise<GenerateResult> {
    let text = '';
    const tokenIds: number[] = [];
    let finishReason: CompletionEvent['finishReason'] = 'abort';
    const summary = newSummary();
    for await (const piece of this.run(prompt, opts, summary)) {
      text += piece.text;
      tokenIds.push(...piece.tokenIds);
      finishReason = piece.finishReason ?? finishReason;
    }
    return { text, tokenIds, finishReason, promptTokens: summary.promptTokens, completionTokens: tokenIds.length };
  }

  /** The prompt ids of a chat: the model's chat template applied to the messages. */
  chatPromptIds(messages: readonly ChatMessage[]): number[] {
    const text = renderChat(this.model.tokenizer, [...messages], { addGenerationPrompt: true, template: this.chatTemplate });
    return this.model.tokenizer.encode(text, { addSpecial: false, parseSpecial: true });
  }

  /** A chat turn: the model's chat template applied to the messages. */
  chat(messages: readonly ChatMessage[], opts: GenerateOptions = {}): Promise<GenerateResult> {
    return this.complete({ messages }, opts);
  }

  /**
   * Embeddings of texts (or token ids), one Float32Array each, in input order; all inputs run
   * together in the engine. Needs an embedding model (or LLMOptions.runner 'pooling').
   * Normalized as the model says unless `normalize` is given; `dimensions` for Matryoshka models.
   */
  async embed(inputs: string | EmbedInput[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    const { vectors } = await embed(this.pipeline, typeof inputs === 'string' ? [inputs] : inputs, opts);
    return vectors;
  }

  /** The documents ranked against the query, best first (a reranker's score, or cosine on an embedding model). */
  async rerank(query: string, documents: readonly string[], opts: { readonly topN?: number; readonly signal?: AbortSignal } = {}): Promise<RerankResult['results']> {
    return (await rerank(this.pipeline, query, documents, opts)).results;
  }

  /** Stops the engine and unmaps the model's files (its weights are gone afterwards). */
  async close(): Promise<void> {
    await this.engine.close();
    this.projector?.dispose();
    this.model.dispose();
  }
}
