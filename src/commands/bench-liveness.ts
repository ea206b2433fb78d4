// `loom bench liveness`: /health latency while long texts are tokenized, rendered and fanned out.
import { Command, Option } from 'commander';
import { formatLivenessReport, runLiveness } from '../bench/liveness.js';
import { intArg } from './bench-args.js';

interface LivenessFlags {
  model: string;
  tokenizerPoolSize: number;
  promptBytes: number;
  fanOut: number;
  refusedPrompts: number;
  json?: boolean;
}

export function benchLivenessCommand(): Command {
  return new Command('liveness')
    .description(
      'start loom serve and send it one heavy request at a time (a long /tokenize, a long completion refused by its bytes and one truncated, ' +
        'a long chat, a /detokenize of 1 Mi ids, a completion of many prompts) while /health is probed back to back; reports /health latency ' +
        'during each (the issue #20 target: max under 250 ms), and the heap before and after a series of refused 4 MiB prompts (in process, after full collections). ' +
        'The server is given a ChatML --chat-template so the chat scenario renders on any model.',
    )
    .requiredOption('--model <model>', 'what loom serve --model takes')
    .addOption(new Option('--tokenizer-pool-size <n>', "the server's tokenizer workers (0: all on the serving thread)").default(1).argParser(intArg('tokenizer-pool-size', 0)))
    .addOption(new Option('--prompt-bytes <n>', 'bytes of the long prompts').default(4 << 20).argParser(intArg('prompt-bytes')))
    .addOption(new Option('--fan-out <n>', 'prompts of the fan-out completion (within the server\'s --max-pending-requests, 1024)').default(1000).argParser(intArg('fan-out')))
    .addOption(new Option('--refused-prompts <n>', 'refused 4 MiB prompts (completion, chat, Ollama in turn; in process) between the two heap readings').default(21).argParser(intArg('refused-prompts', 0)))
    .option('--json', 'print one JSON object with every figure and the settings')
    .action(async (f: LivenessFlags) => {
      const report = await runLiveness(
        { model: f.model, poolSize: f.tokenizerPoolSize, promptBytes: f.promptBytes, fanOut: f.fanOut, refusedPrompts: f.refusedPrompts },
        f.json ? () => {} : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatLivenessReport(report)) + '\n');
    });
}
