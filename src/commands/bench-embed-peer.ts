// `loom bench embed-peer`: /v1/embeddings throughput of loom serve against llama-server --embeddings.
import { Command, Option } from 'commander';
import { BENCH_TYPES } from '../bench/bench-types.js';
import { BENCH_SHAPES } from '../bench/bench-shapes.js';
import type { BenchWeightType } from '../bench/bench-types.js';
import type { BenchShapeName } from '../bench/bench-shapes.js';
import { resolvePeerModel } from '../bench/peer.js';
import { EMBED_PEER_DEFAULTS, runEmbedPeer } from '../bench/embed-peer.js';
import { embedPeerJson, formatEmbedPeer } from '../bench/embed-peer-report.js';
import { intArg, intListArg } from './bench-args.js';
import { addOutputFlags, addServerFlags, serverArgsOf, writeReport } from './peer-flags.js';
import type { OutputFlags, ServerFlags } from './peer-flags.js';

interface EmbedPeerFlags extends ServerFlags, OutputFlags {
  model?: string;
  makeModel?: BenchShapeName;
  type: BenchWeightType;
  threads?: number;
  batch: number[];
  length: number[];
  inputs: number;
  rounds: number;
  seed: number;
  ubatch: number;
}

export function benchEmbedPeerCommand(): Command {
  const d = EMBED_PEER_DEFAULTS;
  return addOutputFlags(addServerFlags(new Command('embed-peer')), 'every run and the cases')
    .description(
      "embeddings a second, loom serve against llama.cpp's llama-server --embeddings on the same GGUF with the same threads: " +
        'POST /v1/embeddings of random token ids, every (inputs per request, tokens per input) case, one request at a time, ' +
        'alternating rounds; prints the medians, their ratio and the lowest cosine between the two servers\' vectors. ' +
        'llama-server: --llama-server PATH, or built once from the source node-llama-cpp ships (as bench serve-peer).',
    )
    .option('-m, --model <file>', 'an embedding GGUF (with a pooling_type)')
    .addOption(new Option('--make-model <shape>', 'a random-weight GGUF of this shape (made once, cached in dist/bench-models/)').choices(Object.keys(BENCH_SHAPES)).default('bge-small-en-v1.5'))
    .addOption(new Option('--type <type>', 'weight type of --make-model').choices([...BENCH_TYPES]).default('f16'))
    .addOption(new Option('--threads <n>', 'compute threads of both servers (default: hardware threads)').argParser(intArg('threads')))
    .addOption(new Option('--batch <list>', 'inputs per request, comma-separated (llama-server gets as many slots as the largest)').default([...d.batches], d.batches.join(',')).argParser(intListArg('batch')))
    .addOption(new Option('--length <list>', 'tokens per input, comma-separated').default([...d.lengths], d.lengths.join(',')).argParser(intListArg('length')))
    .addOption(new Option('--inputs <n>', 'inputs each server embeds per case and round').default(d.inputs).argParser(intArg('inputs')))
    .addOption(new Option('--rounds <n>', 'rounds per case on each server').default(d.rounds).argParser(intArg('rounds')))
    .addOption(new Option('--seed <s>', 'seed of the token ids').default(0).argParser(intArg('seed', 0)))
    .addOption(new Option('--ubatch <n>', "llama-server's -b and -ub (an encoder's input must fit one)").default(d.ubatch).argParser(intArg('ubatch')))
    .action(async (f: EmbedPeerFlags) => {
      const log = (line: string): void => void process.stderr.write(line + '\n');
      const model = resolvePeerModel(f.model !== undefined ? { model: f.model } : { makeModel: { shape: f.makeModel!, type: f.type } }, log);
      const r = await runEmbedPeer(
        {
          model,
          ...(f.threads !== undefined && { threads: f.threads }),
          batches: f.batch,
          lengths: f.length,
          inputs: f.inputs,
          rounds: f.rounds,
          seed: f.seed,
          ubatch: f.ubatch,
          ...serverArgsOf(f),
        },
        log,
      );
      writeReport(f, embedPeerJson(r), () => formatEmbedPeer(r));
    });
}
