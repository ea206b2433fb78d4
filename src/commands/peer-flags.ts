// Flags of the benchmarks against llama.cpp: the model, a GGUF file (-m) or a random-weight one
// of a real model's shape made once and cached (--make-model, --type, --layers); and for those
// that start llama-server beside loom serve, the binary and more flags for each server; and where
// the report goes (--json, --output-file).
import { appendFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { BENCH_SHAPES } from '../bench/bench-shapes.js';
import type { BenchShapeName } from '../bench/bench-shapes.js';
import { BENCH_TYPES } from '../bench/bench-types.js';
import type { BenchWeightType } from '../bench/bench-types.js';
import type { PeerBenchOptions } from '../bench/peer.js';
import { flagWords, intArg } from './bench-args.js';

export interface ModelFlags {
  model?: string;
  makeModel?: BenchShapeName;
  type: BenchWeightType;
  layers?: number;
}

export function addModelFlags(cmd: Command): Command {
  return cmd
    .option('-m, --model <file>', 'GGUF file')
    .addOption(new Option('--make-model <shape>', 'measure a random-weight GGUF of this shape (made once, cached in dist/bench-models/)').choices(Object.keys(BENCH_SHAPES)))
    .addOption(new Option('--type <type>', 'weight type of --make-model').choices([...BENCH_TYPES]).default('q8_0'))
    .addOption(new Option('--layers <n>', "--make-model with fewer layers than the shape's own (a token's cost is linear in them)").argParser(intArg('layers')));
}

/** the flags as the model choice resolvePeerModel takes (it refuses both or neither) */
export function modelChoiceOf(f: ModelFlags): Pick<PeerBenchOptions, 'model' | 'makeModel'> {
  return {
    ...(f.model !== undefined && { model: f.model }),
    ...(f.makeModel !== undefined && { makeModel: { shape: f.makeModel, type: f.type, ...(f.layers !== undefined && { layers: f.layers }) } }),
  };
}

export interface ServerFlags {
  llamaServer?: string;
  loomArgs?: string;
  llamaArgs?: string;
}

export function addServerFlags(cmd: Command, examples: { loom?: string; llama?: string } = {}): Command {
  const eg = (s: string | undefined): string => (s ? ` (e.g. "${s}")` : '');
  return cmd
    .option('--llama-server <path>', 'a llama-server binary to run instead of building one')
    .option('--loom-args <flags>', `more loom serve flags, space-separated${eg(examples.loom)}`)
    .option('--llama-args <flags>', `more llama-server flags, space-separated${eg(examples.llama)}`);
}

/** the flags as the benchmark options: a binary if given, each server's extra flags as a list */
export function serverArgsOf(f: ServerFlags): { llamaServer?: string; loomArgs: string[]; llamaArgs: string[] } {
  return { ...(f.llamaServer !== undefined && { llamaServer: f.llamaServer }), loomArgs: flagWords(f.loomArgs), llamaArgs: flagWords(f.llamaArgs) };
}

export interface OutputFlags {
  json?: boolean;
  outputFile?: string;
}

export function addOutputFlags(cmd: Command, contents: string): Command {
  return cmd.option('--json', `print one JSON object with ${contents}`).option('--output-file <file>', 'append that JSON object as one line');
}

/** The report on stdout (its JSON with --json), its JSON appended to --output-file. */
export function writeReport(f: OutputFlags, report: object, text: () => string): void {
  const json = JSON.stringify(report);
  if (f.outputFile !== undefined) appendFileSync(f.outputFile, json + '\n');
  process.stdout.write((f.json ? json : text()) + '\n');
}
