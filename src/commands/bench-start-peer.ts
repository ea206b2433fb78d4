// `loom bench start-peer`: start to first token and RSS, loom serve against llama-server on one file.
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { formatStartPeer, startMedians } from '../bench/start-peer-report.js';
import { runStartPeer } from '../bench/start-peer.js';
import { flagWords, intArg } from './bench-args.js';

interface StartPeerFlags {
  model: string;
  llamaServer?: string;
  rounds: number;
  threads: number;
  ctxSize: number;
  maxTokens: number;
  prompt: string;
  timeout: number;
  loomArgs?: string;
  llamaArgs?: string;
  json?: boolean;
}

export function benchStartPeerCommand(): Command {
  return new Command('start-peer')
    .description(
      'time from starting a server to its first streamed token, and its memory, loom serve against llama-server on the same GGUF ' +
        '(e.g. a whole-size `bench make-model --shape gpt-oss-20b --type mxfp4_moe`): each round spawns one server, waits for /health, ' +
        'reads VmRSS/VmHWM/RssFile from /proc/PID/status, sends one short streamed completion at once, reads them again at its first ' +
        'token, and stops the server; the sides alternate. Both get the same context, threads and one slot; llama-server keeps its ' +
        'defaults otherwise (mmap, warmup, -fa auto): pass --llama-args "--no-warmup" to skip its warm-up run, which reads every ' +
        'expert before /health answers. The page cache is not dropped between rounds. Linux only. Run it alone on the machine',
    )
    .requiredOption('--model <path>', 'the GGUF file both servers load')
    .option('--llama-server <path>', 'a llama-server binary; without it, loom alone is measured')
    .addOption(new Option('--rounds <n>', 'starts a side').default(3).argParser(intArg('rounds')))
    .addOption(new Option('--threads <n>', 'compute threads of both servers').default(2).argParser(intArg('threads')))
    .addOption(new Option('--ctx-size <n>', 'context length of both (loom --max-model-len, llama-server -c)').default(4096).argParser(intArg('ctx-size')))
    .addOption(new Option('--max-tokens <n>', 'tokens the request asks for').default(4).argParser(intArg('max-tokens')))
    .option('--prompt <text>', 'the request\'s prompt', 'The capital of France is')
    .addOption(new Option('--timeout <s>', 'seconds a start may take').default(600).argParser(intArg('timeout')))
    .option('--loom-args <flags>', 'more loom serve flags, space-separated (e.g. "--no-mmap")')
    .option('--llama-args <flags>', 'more llama-server flags, space-separated (e.g. "--no-warmup" or "--no-mmap")')
    .option('--json', 'print one JSON object: the settings, every round and the medians')
    .action(async (f: StartPeerFlags) => {
      const report = await runStartPeer(
        {
          model: resolve(f.model), rounds: f.rounds, threads: f.threads, ctxSize: f.ctxSize, maxTokens: f.maxTokens, prompt: f.prompt, timeoutMs: f.timeout * 1000,
          ...(f.llamaServer !== undefined && { llamaServer: f.llamaServer }),
          ...(f.loomArgs !== undefined && { loomArgs: flagWords(f.loomArgs) }),
          ...(f.llamaArgs !== undefined && { llamaArgs: flagWords(f.llamaArgs) }),
        },
        (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify({ ...report, medians: startMedians(report.rounds) }) : formatStartPeer(report)) + '\n');
    });
}
