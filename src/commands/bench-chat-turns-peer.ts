// `loom bench chat-turns-peer`: time to first token per turn of a conversation, loom serve against llama-server.
import { appendFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { formatChatTurnsPeerReport, runChatTurnsPeer } from '../bench/chat-turns-peer.js';
import { BENCH_SHAPES, BENCH_TYPES } from '../bench/make-model.js';
import type { BenchShapeName, BenchWeightType } from '../bench/make-model.js';
import { resolvePeerModel } from '../bench/peer.js';
import { intArg, words } from './bench-args.js';

interface ChatTurnsPeerFlags {
  model?: string;
  makeModel?: BenchShapeName;
  type: BenchWeightType;
  layers?: number;
  turns: number;
  systemLen: number;
  userLen: number;
  replyLen: number;
  threads?: number;
  seed: number;
  llamaServer?: string;
  loomArgs?: string;
  llamaArgs?: string;
  json?: boolean;
  outputFile?: string;
}

export function benchChatTurnsPeerCommand(): Command {
  return new Command('chat-turns-peer')
    .description(
      "the conversation of bench chat-turns over HTTP, loom serve against llama.cpp's llama-server on the same GGUF with the same threads " +
        '(both started here, one slot each): each turn the whole history plus a new user message as token ids, the same on both sides ' +
        '(the replies in the history drawn, not the model\'s), streamed, the sides alternating which goes first; per turn the time to the ' +
        'first streamed token and the prompt tokens each server\'s cache served. llama-server: --llama-server PATH, or built once as for serve-peer. ' +
        'Run it alone on the machine',
    )
    .option('-m, --model <file>', 'a GGUF file (e.g. from `loom bench make-model --shape qwen3.5-2b`)')
    .addOption(new Option('--make-model <shape>', 'a random-weight GGUF of this shape instead (made once, cached in dist/bench-models/)').choices(Object.keys(BENCH_SHAPES)))
    .addOption(new Option('--type <type>', 'weight type of --make-model').choices([...BENCH_TYPES]).default('q8_0'))
    .addOption(new Option('--layers <n>', 'layers of --make-model (fewer than the shape\'s)').argParser(intArg('layers')))
    .addOption(new Option('--turns <n>', 'turns of the conversation').default(10).argParser(intArg('turns')))
    .addOption(new Option('--system-len <n>', 'tokens of the system prompt').default(512).argParser(intArg('system-len')))
    .addOption(new Option('--user-len <n>', 'tokens of each user message').default(128).argParser(intArg('user-len')))
    .addOption(new Option('--reply-len <n>', 'tokens of each reply (generated greedily by each server; the history carries drawn ones of this length)').default(16).argParser(intArg('reply-len')))
    .addOption(new Option('--threads <n>', 'compute threads of both servers (default: hardware threads)').argParser(intArg('threads')))
    .addOption(new Option('--seed <n>', 'seed of the token ids').default(0).argParser(intArg('seed', 0)))
    .option('--llama-server <path>', 'a llama-server binary to run instead of building one')
    .option('--loom-args <flags>', 'more loom serve flags, space-separated (e.g. "--state-checkpoints 8")')
    .option('--llama-args <flags>', 'more llama-server flags, space-separated (e.g. "--ctx-checkpoints 8")')
    .option('--json', 'print one JSON object with every turn and the settings')
    .option('--output-file <file>', 'append that JSON object as one line')
    .action(async (f: ChatTurnsPeerFlags) => {
      const log = (line: string): void => void process.stderr.write(line + '\n');
      const makeModel = f.makeModel !== undefined ? { shape: f.makeModel, type: f.type, ...(f.layers !== undefined && { layers: f.layers }) } : undefined;
      const model = resolvePeerModel({ ...(f.model !== undefined && { model: f.model }), ...(makeModel && { makeModel }) }, log);
      const r = await runChatTurnsPeer(
        {
          model, turns: f.turns, systemLen: f.systemLen, userLen: f.userLen, replyLen: f.replyLen, seed: f.seed,
          ...(f.threads !== undefined && { threads: f.threads }), ...(f.llamaServer !== undefined && { llamaServer: f.llamaServer }),
          loomArgs: words(f.loomArgs), llamaArgs: words(f.llamaArgs),
        },
        log,
      );
      const json = JSON.stringify({ benchmark: 'chat-turns-peer', ...r });
      if (f.outputFile !== undefined) appendFileSync(f.outputFile, json + '\n');
      process.stdout.write((f.json ? json : formatChatTurnsPeerReport(r)) + '\n');
    });
}
