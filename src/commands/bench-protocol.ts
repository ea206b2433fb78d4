// `loom bench protocol`: incremental vs cumulative step messages across the worker boundary.
import { Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { MAX_LOGPROBS } from '../engine/sampling-params.js';
import { runProtocolBench } from '../bench/protocol.js';
import { formatProtocolReport } from '../bench/protocol-report.js';
import { intArg, intListArg } from './bench-args.js';

interface ProtocolFlags {
  concurrency: number[];
  outputLen: number;
  topLogprobs: number;
  steps: number;
  warmupSteps: number;
  json?: boolean;
}

export function benchProtocolCommand(): Command {
  return new Command('protocol')
    .description(
      'compare the incremental step protocol (only new tokens, logprobs and top-N per request) with a cumulative one ' +
        '(each request\'s whole output every step) across a real worker_threads boundary, with an engine that runs no model',
    )
    .addOption(new Option('--concurrency <list>', 'concurrent requests, comma-separated; one run per value').default([64, 256], '64,256').argParser(intListArg('concurrency')))
    .addOption(new Option('--output-len <n>', 'tokens per request (= steps per run)').default(2048).argParser(intArg('output-len')))
    .addOption(new Option('--top-logprobs <n>', `top-N alternatives per token (0..${MAX_LOGPROBS})`).default(5).argParser(intArg('top-logprobs', 0)))
    .addOption(new Option('--steps <n>', 'steps averaged for the time figures at each reported length (the window ends at max(length, steps))').default(32).argParser(intArg('steps')))
    .addOption(new Option('--warmup-steps <n>', 'unreported steps before each run').default(128).argParser(intArg('warmup-steps')))
    .option('--json', 'print one JSON object with every figure and the settings')
    .action(async (flags: ProtocolFlags) => {
      if (flags.topLogprobs > MAX_LOGPROBS) throw new InvalidArgumentError(`--top-logprobs must be ≤ ${MAX_LOGPROBS}`);
      const report = await runProtocolBench(
        { concurrency: flags.concurrency, outputLen: flags.outputLen, topN: flags.topLogprobs, steps: flags.steps, warmupSteps: flags.warmupSteps },
        flags.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((flags.json ? JSON.stringify(report) : formatProtocolReport(report)) + '\n');
    });
}
