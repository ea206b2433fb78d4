// `loom embed`: the embedding of each text given (or each line of stdin), printed one JSON
// array per line, by the engine that serves, through the pipeline the server and library use.
import { Command, Option } from 'commander';
import { numberOption } from './parse.js';
import { createEngineCore } from '../engine/create.js';
import { InProcessEngineClient } from '../engine/in-process-client.js';
import { offlineFromEnv } from '../model/hub.js';
import { resolveModelArg } from '../model/model-arg.js';
import { loadModel } from '../model/load.js';
import { RUNNER_KINDS } from '../model/pooling.js';
import type { RunnerKind } from '../model/pooling.js';
import { localContext } from '../pipeline/context.js';
import { embed, rerank } from '../pipeline/embed.js';
import { InvalidArgumentError } from '../errors.js';

interface EmbedFlags {
  model?: string;
  normalize: boolean;
  dimensions?: number;
  truncate?: number;
  query?: string;
  runner: RunnerKind;
  backend?: 'native' | 'reference';
  threads?: number;
  offline?: boolean;
  cacheDir?: string;
}

export function embedCommand(): Command {
  return new Command('embed')
    .description('print the embedding of each text (arguments, else lines of stdin) as one JSON array a line; with --query, rank the texts against it')
    .argument('[texts...]', 'texts to embed (default: one per line of stdin)')
    .option('-m, --model <path>', "an embedding or rerank model: GGUF file, Hugging Face folder, hf:ORG/REPO[:FILE], or a cached model's name")
    .option('--no-normalize', 'print the vectors as the model pools them, not L2-normalized')
    .addOption(new Option('--dimensions <n>', 'keep the first n dimensions (Matryoshka models)').argParser(numberOption('dimensions', true)))
    .addOption(new Option('--truncate <n>', 'keep the last n tokens of a longer text (-1: as many as the context holds)').argParser((v) => Number(v)))
    .option('--query <text>', 'rank the texts against this query: one JSON object a line, best first ({index, score, text})')
    .addOption(new Option('--runner <kind>', 'pooling or generate; auto: what the model file says').choices([...RUNNER_KINDS]).default('auto'))
    .addOption(new Option('--backend <name>', 'kernels').choices(['native', 'reference']))
    .addOption(new Option('--threads <n>', 'compute threads of the native core').argParser(numberOption('threads', true)))
    .option('--offline', 'never contact the Hub: use the local cache only (also HF_HUB_OFFLINE=1)')
    .option('--cache-dir <dir>', 'where hf: downloads go (default: $LOOM_CACHE or ~/.cache/loom)')
    .action(async (texts: string[], flags: EmbedFlags) => runEmbed(texts, flags));
}

async function readStdinLines(): Promise<string[]> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.split('\n').filter((l) => l.length > 0);
}

async function runEmbed(args: string[], flags: EmbedFlags): Promise<void> {
  const texts = args.length > 0 ? args : await readStdinLines();
  if (texts.length === 0) throw new InvalidArgumentError('no texts to embed: give them as arguments or one per line on stdin');
  const { path } = await resolveModelArg(flags.model, { offline: flags.offline ?? offlineFromEnv(), cacheDir: flags.cacheDir });
  const model = loadModel(path);
  const engine = new InProcessEngineClient(
    createEngineCore({ model: path, runner: flags.runner, ...(flags.backend && { backend: flags.backend }), ...(flags.threads !== undefined && { threads: flags.threads }) }, model),
  );
  try {
    const ctx = localContext(engine, model.tokenizer);
    const truncate = flags.truncate !== undefined ? { truncatePromptTokens: flags.truncate } : {};
    if (flags.query !== undefined) {
      const { results } = await rerank(ctx, flags.query, texts, truncate);
      for (const r of results) process.stdout.write(JSON.stringify({ index: r.index, score: r.score, text: texts[r.index] }) + '\n');
      return;
    }
    const { vectors } = await embed(ctx, texts, { normalize: flags.normalize, ...(flags.dimensions !== undefined && { dimensions: flags.dimensions }), ...truncate });
    for (const v of vectors) process.stdout.write(JSON.stringify(Array.from(v)) + '\n');
  } finally {
    await engine.close();
  }
}
