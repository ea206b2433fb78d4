// `loom bench agent-turns`: time to first token per turn of a recorded agent transcript, loom against llama-server.
import { Command, Option } from 'commander';
import { availableParallelism } from 'node:os';
import { DEFAULT_TRANSCRIPT, formatAgentTurnsReport, runAgentTurns } from '../bench/agent-turns.js';
import { intArg } from './bench-args.js';

interface AgentTurnsFlags {
  model: string;
  transcript: string;
  chatTemplate?: string;
  llamaServer?: string;
  llamaArgs?: string;
  threads: number;
  maxTokens: number;
  context: number;
  json?: boolean;
}

export function benchAgentTurnsCommand(): Command {
  return new Command('agent-turns')
    .description(
      'a recorded agent transcript (Claude Code\'s: system prompt, tools, tool_use/tool_result turns) replayed turn by turn ' +
        'through /v1/messages, streamed, against loom serve and (with --llama-server) llama.cpp\'s llama-server on the same GGUF, ' +
        'alternating which goes first: per turn the prompt tokens, the tokens each prefix cache served and the time to first token. ' +
        'Each turn resends the recorded history, not the model\'s replies, so both sides see the same prompts. Run it alone on the machine',
    )
    .requiredOption('--model <path>', 'a GGUF file (e.g. `loom bench make-model --shape qwen2.5-0.5b`)')
    .option('--transcript <file>', 'a recorded /v1/messages request (or its body); its turns are cut at each assistant message', DEFAULT_TRANSCRIPT)
    .option('--chat-template <file>', 'a Jinja chat template for both servers (loom --chat-template, llama-server --chat-template-file): one that renders tools')
    .option('--llama-server <path>', 'a llama-server binary (without one, only loom is measured)')
    .option('--llama-args <flags>', 'more llama-server flags, space-separated')
    .addOption(new Option('--threads <n>', 'compute threads of each server').default(availableParallelism()).argParser(intArg('threads')))
    .addOption(new Option('--max-tokens <n>', 'tokens generated a turn').default(4).argParser(intArg('max-tokens')))
    .addOption(new Option('--context <n>', 'context length of each server (loom --max-model-len, llama-server -c)').default(32768).argParser(intArg('context')))
    .option('--json', 'print one JSON object with every turn and the settings')
    .action(async (f: AgentTurnsFlags) => {
      const report = await runAgentTurns(
        {
          model: f.model, transcript: f.transcript, threads: f.threads, maxTokens: f.maxTokens, context: f.context,
          ...(f.chatTemplate !== undefined && { chatTemplate: f.chatTemplate }), ...(f.llamaServer !== undefined && { llamaServer: f.llamaServer }),
          ...(f.llamaArgs !== undefined && { llamaArgs: f.llamaArgs.split(/\s+/).filter(Boolean) }),
        },
        (line) => process.stderr.write(line + '\n'),
      );
      process.stdout.write((f.json ? JSON.stringify(report) : formatAgentTurnsReport(report)) + '\n');
    });
}
