// `loom generate`: one prompt's completion, printed as it is produced, by the engine that
// serves (EngineCore on this thread) through the request pipeline the server and the
// library use (src/pipeline/: render, tokenize, resolve once, detokenize).
import { Command, Option } from 'commander';
import { kvCacheDtypeOption, numberOption } from './parse.js';
import type { KvCacheDtypeOption } from './parse.js';
import { addLoadFlags, loadOptionsOf } from './load-flags.js';
import type { LoadFlags } from './load-flags.js';
import { InvalidArgumentError } from '../errors.js';
import { createEngineCore } from '../engine/create.js';
import { InProcessEngineClient } from '../engine/in-process-client.js';
import { offlineFromEnv } from '../model/hub.js';
import { resolveModelArg } from '../model/model-arg.js';
import { loadModel } from '../model/load.js';
import { inlineText, localContext } from '../pipeline/context.js';
import type { TextCodec } from '../pipeline/context.js';
import { newSummary, runPrompt } from '../pipeline/generate.js';
import { renderChatPrompt } from '../pipeline/prompt.js';
import { resolveRequest } from '../pipeline/request.js';
import { loadChatTemplate } from '../tokenizer/chat-template.js';
import { inlineVision } from '../pipeline/images.js';
import type { VisionContext } from '../pipeline/images.js';
import { tokenizeImagePrompt } from '../pipeline/image-prompt.js';
import type { ImageInput } from '../pipeline/image-input.js';
import type { PromptInput } from '../pipeline/prompt.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { addVisionFlags, imageLimitsOf, openProjector, preparedOnce, projectorPath, readImageFiles, withImageMarkers } from './vision-flags.js';
import type { VisionFlags } from './vision-flags.js';
import { addKvCacheDirFlags, kvCacheDirOptionsOf } from './kv-cache-dir-flags.js';
import type { KvCacheDirFlags } from './kv-cache-dir-flags.js';

interface GenerateFlags extends LoadFlags, VisionFlags, KvCacheDirFlags {
  image?: string[];
  model?: string;
  prompt: string;
  maxTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed?: number;
  ignoreEos?: boolean;
  chat?: boolean;
  chatTemplate?: string;
  json?: boolean;
  ctxSize?: number;
  backend?: 'native' | 'reference';
  threads?: number;
  offline?: boolean;
  cacheDir?: string;
  speculativeConfig?: string;
  kvCacheDtype: KvCacheDtypeOption;
}

const number = numberOption;

export function generateCommand(): Command {
  const cmd = new Command('generate')
    .description('generate a completion for one prompt, printed as it is produced')
    .option('-m, --model <path>', "GGUF file, Hugging Face model folder, hf:ORG/REPO[:FILE] from the Hub, or a cached model's name (default: the built-in stories260K)")
    .requiredOption('-p, --prompt <text>', 'the prompt')
    .addOption(new Option('-n, --max-tokens <n>', 'most tokens to generate').default(128).argParser(number('max-tokens', true)))
    .addOption(new Option('--temperature <t>', 'sampling temperature; 0 is greedy').default(0.8).argParser(number('temperature', false)))
    .addOption(new Option('--top-k <k>', 'keep the k most likely tokens; 0 keeps all').default(40).argParser(number('top-k', true)))
    .addOption(new Option('--top-p <p>', 'keep the most likely tokens up to this probability mass').default(0.95).argParser(number('top-p', false)))
    .addOption(new Option('--min-p <p>', 'drop tokens less likely than p times the most likely').default(0.05).argParser(number('min-p', false)))
    .addOption(new Option('--seed <s>', 'sampling seed (random when absent)').argParser(number('seed', true)))
    .addOption(new Option('--ctx-size <n>', 'context length (default: the model\'s)').argParser(number('ctx-size', true)))
    .addOption(new Option('--backend <name>', 'kernels: native (C++ core) or reference (TypeScript); default native when it loads').choices(['native', 'reference']))
    .addOption(new Option('--threads <n>', 'compute threads of the native core (default: hardware threads)').argParser(number('threads', true)))
    .addOption(kvCacheDtypeOption())
    .option('--ignore-eos', 'keep generating past end-of-sequence tokens')
    .option('--chat', "apply the model's chat template to the prompt as a user message")
    .option('--chat-template <file-or-string>', "with --chat: a Jinja chat template (a file, or the template itself) used instead of the model's")
    .option('--json', 'print one JSON object with prompt_ids, output_ids, text, finish_reason, cached_tokens')
    .option('--offline', 'never contact the Hub: use the local cache only (also HF_HUB_OFFLINE=1)')
    .option('--cache-dir <dir>', 'where hf: downloads go (default: $LOOM_CACHE or ~/.cache/loom)')
    .option('--speculative-config <json>', 'speculative decoding as vLLM\'s, e.g. \'{"method": "ngram", "num_speculative_tokens": 4}\'')
    .option('--image <file...>', 'with --mmproj: images the prompt reads (JPEG, PNG, WebP, GIF); at its <__media__> markers, or before its text')
    .action((flags: GenerateFlags) => runGenerate(flags));
  return addKvCacheDirFlags(addVisionFlags(addLoadFlags(cmd)), 'the next run with the same prompt prefix skips their prefill');
}

/** the prompt's ids, before the engine exists (its context is sized by them) */
async function promptIdsFor(text: TextCodec, flags: GenerateFlags, images: readonly ImageInput[], vision: VisionContext | undefined, tokenizer: Tokenizer): Promise<number[]> {
  const prompt = withImageMarkers(flags.prompt, images.length);
  const rendered = flags.chat ? await renderChatPrompt(text, { messages: [{ role: 'user', content: prompt }] }) : prompt;
  // a rendered template carries its own BOS where the model wants one
  const addSpecial = !flags.chat;
  if (images.length > 0) return (await tokenizeImagePrompt({ text, tokenizer, vision }, rendered, images, { addSpecial, parseSpecial: true, param: '--prompt' })).ids;
  return flags.chat ? text.encode(rendered, { addSpecial: false, parseSpecial: true }) : text.encode(rendered, { addSpecial: true });
}

/** what the pipeline resolves: the ids, or (with images) the prompt and its images, prepared once */
function promptInput(flags: GenerateFlags, ids: number[], images: ImageInput[]): PromptInput {
  if (images.length === 0) return ids;
  const text = withImageMarkers(flags.prompt, images.length);
  return flags.chat ? { messages: [{ role: 'user', content: text }], images } : { text, images };
}

async function runGenerate(flags: GenerateFlags): Promise<void> {
  if (flags.maxTokens < 1) throw new InvalidArgumentError(`--max-tokens must be at least 1, got ${flags.maxTokens}`);
  if (flags.threads !== undefined && flags.threads < 1) throw new InvalidArgumentError(`--threads must be at least 1, got ${flags.threads}`);
  const { path } = await resolveModelArg(flags.model, { offline: flags.offline ?? offlineFromEnv(), cacheDir: flags.cacheDir });
  const model = loadModel(path, loadOptionsOf(flags));
  const { config, tokenizer } = model;
  const contextLength = Math.min(flags.ctxSize ?? config.contextLength, config.contextLength);
  const template = flags.chat && flags.chatTemplate !== undefined ? loadChatTemplate(flags.chatTemplate) : undefined;
  const images = readImageFiles(flags.image ?? []);
  const mmproj = projectorPath(flags, path);
  const projector = openProjector(mmproj, config, loadOptionsOf(flags));
  if (images.length > 0 && !projector) throw new InvalidArgumentError('--image needs a vision projector (--mmproj)', '--image');
  const vision = projector && preparedOnce(inlineVision(projector, imageLimitsOf(flags)));
  const promptIds = await promptIdsFor(inlineText(tokenizer, template), flags, images, vision, tokenizer);
  if (promptIds.length >= contextLength) {
    const option = flags.ctxSize !== undefined ? '--ctx-size' : "the model's context length";
    throw new InvalidArgumentError(`--prompt has ${promptIds.length} tokens; ${option} (${contextLength}) leaves no room to generate`);
  }
  // the engine that serves, on this thread, sized for this one sequence
  const maxModelLen = Math.min(contextLength, promptIds.length + flags.maxTokens);
  const engine = new InProcessEngineClient(
    createEngineCore(
      {
        model: path,
        backend: flags.backend ?? 'auto',
        ...(flags.threads !== undefined && { threads: flags.threads }),
        maxModelLen,
        maxNumSeqs: 1,
        kvCacheDtype: flags.kvCacheDtype,
        maxNumBatchedTokens: Math.max(2048, promptIds.length),
        // one prompt has nothing to share in memory; with --kv-cache-dir, its blocks go to disk
        // (and a prefix found there is loaded), which is prefix caching's path
        enablePrefixCaching: flags.kvCacheDir !== undefined,
        ...kvCacheDirOptionsOf(flags),
        ...(flags.speculativeConfig !== undefined && { speculativeConfig: flags.speculativeConfig }),
        ...(mmproj !== undefined && { mmproj }),
        ...loadOptionsOf(flags),
      },
      { ...model, projector },
    ),
  );
  const seed = flags.seed ?? Math.floor(Math.random() * 2 ** 31);
  const outputIds: number[] = [];
  let text = '';
  let finishReason: string = 'length';
  const summary = newSummary();
  const stop = new AbortController();
  const onSigint = (): void => stop.abort();
  process.once('SIGINT', onSigint);
  try {
    const ctx = { ...localContext(engine, tokenizer, template), vision };
    const r = await resolveRequest(ctx, {
      prompts: [promptInput(flags, promptIds, images)],
      promptParam: '--prompt',
      // ids carry their BOS already; a text with images gets it as the ids did
      addSpecialTokens: images.length > 0 && !flags.chat,
      maxTokens: undefined,
      maxTokensParam: '--max-tokens',
      // what the engine was sized for: --max-tokens within the context
      defaultMaxTokens: maxModelLen - promptIds.length,
      sampling: { temperature: flags.temperature, topK: flags.topK, topP: flags.topP, minP: flags.minP, seed, ignoreEos: flags.ignoreEos ?? false },
      idPrefix: 'generate',
    });
    const events = runPrompt(ctx, r, 0, stop.signal, summary);
    for await (const e of events) {
      outputIds.push(...e.tokenIds);
      text += e.text;
      if (!flags.json) process.stdout.write(e.text);
      if (e.finishReason) finishReason = e.finishReason;
    }
  } finally {
    process.off('SIGINT', onSigint);
    await engine.close();
  }
  if (flags.json) {
    // cached_tokens: the prompt's tokens found in the prefix cache (with --kv-cache-dir: on disk)
    process.stdout.write(JSON.stringify({ prompt_ids: promptIds, output_ids: outputIds, text, finish_reason: finishReason, cached_tokens: summary.cachedTokens }) + '\n');
  } else {
    process.stdout.write('\n');
  }
}
