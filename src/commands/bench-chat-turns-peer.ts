// `loom bench chat-turns-peer`: time to first token per turn of a conversation, loom serve against llama-server.
import { Command, Option } from 'commander';
import { formatChatTurnsPeerReport, runChatTurnsPeer } from '../bench/chat-turns-peer.js';
import { resolvePeerModel } from '../bench/peer.js';
import { intArg } from './bench-args.js';
import { addModelFlags, addOutputFlags, addServerFlags, modelChoiceOf, serverArgsOf, writeReport } from './peer-flags.js';
import type { ModelFlags, OutputFlags, ServerFlags } from './peer-flags.js';

interface ChatTurnsPeerFlags extends ModelFlags, ServerFlags, OutputFlags {
  turns: number;
  systemLen: number;
  userLen: number;
  replyLen: number;
  threads?: number;
  seed: number;
  ownReplies?: boolean;
}

export function benchChatTurnsPeerCommand(): Command {
  const cmd = addServerFlags(addModelFlags(new Command('chat-turns-peer')), { loom: '--state-checkpoints 8', llama: '--ctx-checkpoints 8' });
  return addOutputFlags(cmd, 'every turn and the settings')
    .description(
      "the conversation of bench chat-turns over HTTP, loom serve against llama.cpp's llama-server on the same GGUF with the same threads " +
        '(both started here, one slot each): each turn the whole history plus a new user message as token ids, the same on both sides ' +
        '(the replies in the history drawn, not the model\'s), streamed, the sides alternating which goes first; per turn the time to the ' +
        'first streamed token and the prompt tokens each server\'s cache served. llama-server: --llama-server PATH, or built once as for serve-peer. ' +
        'Run it alone on the machine',
    )
    .addOption(new Option('--turns <n>', 'turns of the conversation').default(10).argParser(intArg('turns')))
    .addOption(new Option('--system-len <n>', 'tokens of the system prompt').default(512).argParser(intArg('system-len')))
    .addOption(new Option('--user-len <n>', 'tokens of each user message').default(128).argParser(intArg('user-len')))
    .addOption(new Option('--reply-len <n>', 'tokens of each reply (generated greedily by each server; the history carries drawn ones of this length)').default(16).argParser(intArg('reply-len')))
    .addOption(new Option('--threads <n>', 'compute threads of both servers (default: hardware threads)').argParser(intArg('threads')))
    .addOption(new Option('--seed <n>', 'seed of the token ids').default(0).argParser(intArg('seed', 0)))
    .option('--own-replies', "each server's history carries its own greedy replies, not the drawn ones (a client resending the generated ids: llama-server then continues from its slot's state)")
    .action(async (f: ChatTurnsPeerFlags) => {
      const log = (line: string): void => void process.stderr.write(line + '\n');
      const model = resolvePeerModel(modelChoiceOf(f), log);
      const r = await runChatTurnsPeer(
        {
          model, turns: f.turns, systemLen: f.systemLen, userLen: f.userLen, replyLen: f.replyLen, seed: f.seed,
          ...(f.threads !== undefined && { threads: f.threads }), ...serverArgsOf(f), ...(f.ownReplies === true && { ownReplies: true }),
        },
        log,
      );
      writeReport(f, { benchmark: 'chat-turns-peer', ...r }, () => formatChatTurnsPeerReport(r));
    });
}
