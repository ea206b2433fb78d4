// `loom bench kernels`: the native kernels against this machine's FMA peak and read bandwidth.
import { Command, Option } from 'commander';
import { runKernelBench } from '../bench/kernels.js';
import { formatKernelReport } from '../bench/kernels-report.js';
import { intArg } from './bench-args.js';

interface KernelFlags {
  threads?: number;
  quick?: boolean;
  json?: boolean;
  types?: string;
}

export function benchKernelsCommand(): Command {
  return new Command('kernels')
    .description(
      "measure this machine's f32 FMA peak and memory read bandwidth (native probes, same run), then the native " +
        'matmul per weight type at 1 row (GB/s of weights) and 512 rows (GFLOP/s) and attention decode at 1k/4k context ' +
        '(GB/s of KV); each figure is the median of repeated calls',
    )
    .addOption(new Option('--threads <n>', 'compute threads of the native core (default: hardware threads)').argParser(intArg('threads')))
    .option('--quick', 'tiny sizes and few repetitions (a smoke test; the figures mean little)')
    .option('--json', 'print one JSON object with every figure and the settings')
    .option('--types <list>', 'comma-separated matmul weight types to measure (e.g. Q4_K,Q5_K; default: all)')
    .action((f: KernelFlags) => {
      const report = runKernelBench(
        {
          quick: f.quick ?? false,
          ...(f.threads !== undefined && { threads: f.threads }),
          ...(f.types !== undefined && { types: f.types.split(',').map((t) => t.trim().toUpperCase()) }),
        },
        f.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatKernelReport(report)) + '\n');
    });
}
