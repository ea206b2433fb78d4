import { Command, Option } from 'commander';
import { numberOption } from './parse.js';
import { InvalidArgumentError } from '../errors.js';
import { generateTokens } from '../engine/generate.js';
import type { FinishReason } from '../engine/generate.js';
import { selectKernels } from '../kernels/select.js';
import { createArchitecture } from '../model/arch/index.js';
import { KvCache } from '../model/kv-cache.js';
import { resolveModelPath } from '../model/hub.js';
import { loadModel } from '../model/load.js';
import { ModelRunner } from '../model/runner.js';
import { renderChat } from '../tokenizer/chat-template.js';
import { IncrementalDetokenizer } from '../tokenizer/detokenizer.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

interface GenerateFlags {
  model: string;
  prompt: string;
  maxTokens: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed?: number;
  ignoreEos?: boolean;
  chat?: boolean;
  json?: boolean;
  ctxSize?: number;
  backend?: 'native' | 'reference';
  threads?: number;
  offline?: boolean;
  cacheDir?: string;
}

const number = numberOption;

export function generateCommand(): Command {
  return new Command('generate')
    .description('generate a completion for one prompt, printed as it is produced')
    .requiredOption('-m, --model <path>', 'GGUF file, Hugging Face model folder, or hf:ORG/REPO[:FILE] from the Hub')
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
    .option('--ignore-eos', 'keep generating past end-of-sequence tokens')
    .option('--chat', "apply the model's chat template to the prompt as a user message")
    .option('--json', 'print one JSON object with prompt_ids, output_ids, text, finish_reason')
    .option('--offline', 'never contact the Hub: use the local cache only (also HF_HUB_OFFLINE=1)')
    .option('--cache-dir <dir>', 'where hf: downloads go (default: $LOOM_CACHE or ~/.cache/loom)')
    .action((flags: GenerateFlags) => runGenerate(flags));
}

function promptIdsFor(tokenizer: Tokenizer, flags: GenerateFlags): number[] {
  if (!flags.chat) return tokenizer.encode(flags.prompt, { addSpecial: true });
  const text = renderChat(tokenizer, [{ role: 'user', content: flags.prompt }]);
  // the rendered template carries its own BOS where the model wants one
  return tokenizer.encode(text, { addSpecial: false, parseSpecial: true });
}

async function runGenerate(flags: GenerateFlags): Promise<void> {
  if (flags.maxTokens < 0) throw new InvalidArgumentError('--max-tokens must be ≥ 0');
  if (flags.threads !== undefined && flags.threads < 1) throw new InvalidArgumentError('--threads must be ≥ 1');
  const kernels = selectKernels(flags.backend ?? 'auto', flags.threads);
  const model = loadModel(await resolveModelPath(flags.model, { offline: flags.offline ?? false, cacheDir: flags.cacheDir }));
  const { config, tokenizer } = model;
  const contextLength = Math.min(flags.ctxSize ?? config.contextLength, config.contextLength);
  const promptIds = promptIdsFor(tokenizer, flags);
  const needed = Math.min(contextLength, promptIds.length + flags.maxTokens);
  const blockSize = 16;
  const kv = KvCache.forModel(config, Math.max(1, Math.ceil(needed / blockSize)), blockSize);
  const runner = new ModelRunner(createArchitecture(config, model.tensors, contextLength), kv, kernels);
  const detok = new IncrementalDetokenizer(tokenizer, { prefixIds: promptIds, skipSpecial: true });
  const outputIds: number[] = [];
  let text = '';
  let finishReason: FinishReason = 'length';
  const seed = flags.seed ?? Math.floor(Math.random() * 2 ** 31);
  const sampling = { temperature: flags.temperature, topK: flags.topK, topP: flags.topP, minP: flags.minP, seed };
  const tokens = generateTokens(runner, promptIds, {
    maxTokens: flags.maxTokens,
    sampling,
    stopIds: tokenizer.stopIds,
    ignoreEos: flags.ignoreEos ?? false,
    contextLength: needed,
  });
  for (const token of tokens) {
    if (token.finishReason) finishReason = token.finishReason;
    if (token.finishReason === 'stop') break; // a stop token is not part of the output
    outputIds.push(token.id);
    const piece = detok.push([token.id]);
    text += piece;
    if (!flags.json) process.stdout.write(piece);
  }
  const rest = detok.flush();
  text += rest;
  if (flags.json) {
    process.stdout.write(JSON.stringify({ prompt_ids: promptIds, output_ids: outputIds, text, finish_reason: finishReason }) + '\n');
  } else {
    process.stdout.write(rest + '\n');
  }
}
