// `loom bench chat-turns`: time to first token per turn of a conversation, prefix cache on and off.
import { Command, Option } from 'commander';
import { formatChatTurnsReport, runChatTurnsBench } from '../bench/chat-turns.js';
import { intArg } from './bench-args.js';

interface ChatTurnsFlags {
  model: string;
  turns: number;
  systemLen: number;
  userLen: number;
  replyLen: number;
  threads?: number;
  kvCacheMemory: string;
  maxNumSeqs: number;
  stateCheckpoints?: number;
  seed: number;
  json?: boolean;
}

export function benchChatTurnsCommand(): Command {
  return new Command('chat-turns')
    .description(
      'a conversation through the engine on this thread, each turn resending the whole history plus a new user message ' +
        '(seeded random token ids): time to first token per turn with the prefix cache on and off (the two engines take turns, ' +
        'so a loaded machine slows both alike). For hybrid and sliding-window models the hits come from checkpoints',
    )
    .requiredOption('--model <path>', 'a GGUF file (e.g. from `loom bench make-model --shape qwen3.5-2b`)')
    .addOption(new Option('--turns <n>', 'turns of the conversation').default(10).argParser(intArg('turns')))
    .addOption(new Option('--system-len <n>', 'tokens of the system prompt').default(512).argParser(intArg('system-len')))
    .addOption(new Option('--user-len <n>', 'tokens of each user message').default(128).argParser(intArg('user-len')))
    .addOption(new Option('--reply-len <n>', 'tokens of each reply (greedy)').default(16).argParser(intArg('reply-len')))
    .addOption(new Option('--threads <n>', 'compute threads').argParser(intArg('threads')))
    .addOption(new Option('--kv-cache-memory <size>', 'each engine\'s --kv-cache-memory').default('1GiB'))
    .addOption(new Option('--max-num-seqs <n>', 'each engine\'s --max-num-seqs').default(4).argParser(intArg('max-num-seqs')))
    .addOption(new Option('--state-checkpoints <n>', 'the cached engine\'s --state-checkpoints (hybrid models)').argParser(intArg('state-checkpoints', 0)))
    .addOption(new Option('--seed <n>', 'seed of the token ids').default(0).argParser(intArg('seed', 0)))
    .option('--json', 'print one JSON object with every figure and the settings')
    .action((f: ChatTurnsFlags) => {
      const report = runChatTurnsBench(
        {
          model: f.model, turns: f.turns, systemLen: f.systemLen, userLen: f.userLen, replyLen: f.replyLen, kvCacheMemory: f.kvCacheMemory,
          maxNumSeqs: f.maxNumSeqs, seed: f.seed,
          ...(f.threads !== undefined && { threads: f.threads }), ...(f.stateCheckpoints !== undefined && { stateCheckpoints: f.stateCheckpoints }),
        },
        f.json ? undefined : (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatChatTurnsReport(report)) + '\n');
    });
}
