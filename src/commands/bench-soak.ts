// `loom bench soak`: memory and latency of a server over many mixed requests.
import { Command, Option } from 'commander';
import { runSoak } from '../bench/soak.js';
import { formatSoakReport } from '../bench/soak-report.js';
import { intArg, numberArg } from './bench-args.js';

interface SoakFlags {
  baseUrl: string;
  model: string;
  requests: number;
  concurrency: number;
  sampleEvery: number;
  warmup: number;
  maxTokens: number;
  seed: number;
  apiKey?: string;
  json?: boolean;
}

export function benchSoakCommand(): Command {
  return new Command('soak')
    .description('drive a running server with a seeded mix of requests (plain, streamed, chat, cut streams, n > 1 with logprobs, bad requests, tokenize) and report its RSS, heap, KV use and latency over time, with the growth per 1,000 requests after warm-up')
    .requiredOption('--base-url <url>', 'the server, e.g. http://127.0.0.1:8000')
    .requiredOption('--model <name>', 'the served model name')
    .addOption(new Option('--requests <n>', 'requests in all').default(5000).argParser(intArg('requests')))
    .addOption(new Option('--concurrency <n>', 'requests at once').default(8).argParser(intArg('concurrency')))
    .addOption(new Option('--sample-every <n>', 'requests between samples').default(250).argParser(intArg('sample-every')))
    .addOption(new Option('--warmup <share>', 'share of the requests left out of the growth fit').default(0.2).argParser(numberArg('warmup', 0, 0.9)))
    .addOption(new Option('--max-tokens <n>', 'tokens per completion').default(16).argParser(intArg('max-tokens')))
    .addOption(new Option('--seed <n>', 'seed of the request mix').default(1).argParser(intArg('seed', 0)))
    .option('--api-key <key>', 'sent as Authorization: Bearer (also LOOM_API_KEY)', process.env.LOOM_API_KEY)
    .option('--json', 'print one JSON object with every figure and the settings')
    .action(async (f: SoakFlags) => {
      const report = await runSoak(
        { baseUrl: f.baseUrl.replace(/\/+$/, ''), model: f.model, requests: f.requests, concurrency: f.concurrency, sampleEvery: f.sampleEvery, warmupShare: f.warmup, maxTokens: f.maxTokens, seed: f.seed, apiKey: f.apiKey },
        f.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatSoakReport(report)) + '\n');
      if (report.failures > 0) process.exitCode = 1;
    });
}
