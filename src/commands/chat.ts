// `loom chat`: talk to a model in the terminal, as `ollama run` does. Replies stream through
// the model's chat template (or continue the transcript as plain text when it has none);
// Ctrl-C stops the reply under way (at an empty prompt it leaves); /exit, /clear, /system;
// /image PATH (and --image PATH) attaches an image file to the next message.
import { readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Command, Option } from 'commander';
import { LoomError } from '../errors.js';
import { LLM } from '../llm.js';
import type { ImageInput } from '../pipeline/image-input.js';
import { DEFAULT_MAX_IMAGE_BYTES, imageFormat } from '../server/image-data.js';
import { offlineFromEnv } from '../model/hub.js';
import { resolveModelArg } from '../model/model-arg.js';
import { ChatSession } from './chat-session.js';
import { kvCacheDtypeOption, numberOption } from './parse.js';
import type { KvCacheDtypeOption } from './parse.js';
import { addLoadFlags, loadOptionsOf } from './load-flags.js';
import { addVisionFlags } from './vision-flags.js';
import type { VisionFlags } from './vision-flags.js';
import type { LoadFlags } from './load-flags.js';
import { addKvCacheDirFlags, kvCacheDirOptionsOf } from './kv-cache-dir-flags.js';
import type { KvCacheDirFlags } from './kv-cache-dir-flags.js';

interface ChatFlags extends LoadFlags, Pick<VisionFlags, 'mmproj'>, KvCacheDirFlags {
  model?: string;
  system?: string;
  maxTokens?: number;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed?: number;
  ignoreEos?: boolean;
  ctxSize?: number;
  verbose?: boolean;
  backend: 'auto' | 'native' | 'reference';
  threads?: number;
  offline?: boolean;
  cacheDir?: string;
  kvCacheDtype: KvCacheDtypeOption;
  image: string[];
}

const HELP = `commands: /exit (or Ctrl-D) leaves, /clear forgets the conversation, /system TEXT sets the system prompt
(/system alone removes it), /image PATH attaches an image (PNG, JPEG, GIF, WebP) to your next message, /help shows this;
Ctrl-C stops a reply`;

/** An image file read and checked to be one the pipeline decodes; the reason as an error otherwise. */
export async function readImageFile(path: string): Promise<ImageInput> {
  let bytes: Uint8Array;
  try {
    const size = (await stat(path)).size;
    if (size > DEFAULT_MAX_IMAGE_BYTES) throw new LoomError(`${path} is ${size} bytes, over the ${DEFAULT_MAX_IMAGE_BYTES} an image may have`);
    bytes = await readFile(path);
  } catch (err) {
    if (err instanceof LoomError) throw err;
    throw new LoomError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (imageFormat(bytes) === undefined) throw new LoomError(`${path} is not a PNG, JPEG, GIF or WebP file`);
  return { bytes, param: path };
}

export function chatCommand(): Command {
  const n = numberOption;
  const cmd = new Command('chat')
    .description('chat with a model in the terminal (streamed replies, history kept)')
    .option('-m, --model <path>', "GGUF file, Hugging Face folder, hf:ORG/REPO[:FILE], or a cached model's name (default: the built-in stories260K)")
    .option('--system <text>', 'system prompt')
    .addOption(new Option('-n, --max-tokens <n>', 'most tokens per reply (default: until the context is full)').argParser(n('max-tokens', true)))
    .addOption(new Option('--temperature <t>', 'sampling temperature; 0 is greedy').default(0.8).argParser(n('temperature', false)))
    .addOption(new Option('--top-k <k>', 'keep the k most likely tokens; 0 keeps all').default(40).argParser(n('top-k', true)))
    .addOption(new Option('--top-p <p>', 'nucleus sampling mass').default(0.95).argParser(n('top-p', false)))
    .addOption(new Option('--min-p <p>', 'drop tokens less likely than p times the most likely').default(0.05).argParser(n('min-p', false)))
    .addOption(new Option('--seed <s>', 'sampling seed').argParser(n('seed', true)))
    .option('--ignore-eos', 'keep generating past end-of-sequence tokens')
    .addOption(new Option('--ctx-size <n>', "context length (default: the model's)").argParser(n('ctx-size', true)))
    .option('--verbose', 'tokens and tokens/s after each reply (on stderr)')
    .addOption(new Option('--backend <name>', 'kernels').choices(['auto', 'native', 'reference']).default('auto'))
    .addOption(new Option('--threads <n>', 'compute threads (default: hardware threads)').argParser(n('threads', true)))
    .addOption(kvCacheDtypeOption())
    .option('--offline', 'never contact the Hub (also HF_HUB_OFFLINE=1)')
    .option('--cache-dir <dir>', 'model cache (default: $LOOM_CACHE or ~/.cache/loom)')
    .option('--image <path>', 'attach an image file to the first message (repeat for more; in the chat: /image PATH)', (v: string, all: string[]) => [...all, v], [] as string[])
    .action((flags: ChatFlags) => runChat(flags));
  return addKvCacheDirFlags(addVisionFlags(addLoadFlags(cmd), false), 'a conversation resumed later (the same turns again) skips their prefill');
}

async function runChat(flags: ChatFlags): Promise<void> {
  const { path, name } = await resolveModelArg(flags.model, { offline: flags.offline ?? offlineFromEnv(), cacheDir: flags.cacheDir });
  const llm = await LLM.load(path, {
    backend: flags.backend,
    ...(flags.threads !== undefined && { threads: flags.threads }),
    ...(flags.ctxSize !== undefined && { maxModelLen: flags.ctxSize }),
    kvCacheDtype: flags.kvCacheDtype,
    maxNumSeqs: 1, // one conversation: the KV cache holds one context, no more
    ...kvCacheDirOptionsOf(flags),
    ...(flags.mmproj !== undefined && { mmproj: flags.mmproj }),
    ...loadOptionsOf(flags),
  });
  const templated = (llm.model.tokenizer.chatTemplate ?? '').trim() !== '';
  const session = new ChatSession(llm, templated, flags.system);
  const tty = process.stdin.isTTY === true;
  const log = (line: string): void => void process.stderr.write(line + '\n');
  /** images attached to the next message */
  let pending: ImageInput[] = [];
  const attach = async (path: string): Promise<void> => {
    pending.push(await readImageFile(path));
    log(`loom: ${path} attached to your next message (${pending.length} image${pending.length > 1 ? 's' : ''})`);
  };
  for (const path of flags.image) await attach(path);
  log(`loom: chatting with ${name} (context ${llm.engine.info.maxModelLen} tokens); /help for commands`);
  if (!templated) log(`loom: ${name} has no chat template: each message continues the conversation as plain text`);

  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: tty, prompt: '>>> ' });
  let reply: AbortController | undefined;
  const interrupt = (): void => {
    if (reply) return reply.abort();
    if (tty && rl.line !== '') {
      rl.write(null, { ctrl: true, name: 'u' }); // Ctrl-C on a typed line clears it
      return;
    }
    rl.close();
  };
  rl.on('SIGINT', interrupt);
  process.on('SIGINT', interrupt);
  const prompt = (): void => {
    if (tty) rl.prompt();
  };

  prompt();
  try {
    for await (const raw of rl) {
      const line = raw.trim();
      if (line === '') {
        prompt();
        continue;
      }
      if (line.startsWith('/')) {
        const [command, ...rest] = line.split(/\s+/);
        if (command === '/exit' || command === '/bye') break;
        if (command === '/clear') {
          session.clear();
          log('loom: conversation cleared');
        } else if (command === '/image') {
          const path = line.slice('/image'.length).trim();
          if (path === '') log('loom: /image PATH attaches an image file to your next message');
          else await attach(path).catch((err: unknown) => log(`loom: ${(err as Error).message}`));
        } else if (command === '/system') {
          session.system = rest.length > 0 ? line.slice('/system'.length).trim() : undefined;
          log(session.system ? 'loom: system prompt set' : 'loom: system prompt removed');
        } else {
          log(command === '/help' || command === '/?' ? HELP : `loom: unknown command ${command}; ${HELP}`);
        }
        prompt();
        continue;
      }
      reply = new AbortController();
      const images = pending;
      pending = [];
      try {
        await answer(llm, session, line, images, flags, reply.signal);
      } catch (err) {
        // a refused message (an image the model cannot read, a prompt too long) leaves the chat as it was
        if (!(err instanceof LoomError)) throw err;
        log(`loom: ${err.message}`);
      }
      reply = undefined;
      prompt();
    }
  } finally {
    process.off('SIGINT', interrupt);
    rl.close();
    await llm.close();
  }
}

async function answer(llm: LLM, session: ChatSession, user: string, images: readonly ImageInput[], flags: ChatFlags, signal: AbortSignal): Promise<void> {
  // room kept for the reply when old turns must go: what was asked for, else a quarter of the context
  const context = llm.engine.info.maxModelLen;
  const room = Math.max(1, Math.min(flags.maxTokens ?? Math.ceil(context / 4), context - 1));
  const next = session.prompt(user, images, room);
  if (!next) {
    process.stderr.write(`loom: that message does not fit the context of ${llm.engine.info.maxModelLen} tokens\n`);
    return;
  }
  const started = performance.now();
  let firstAt: number | undefined;
  let text = '';
  let tokens = 0;
  let firstTokens = 0;
  let finish: string | undefined;
  const { maxTokens, temperature, topK, topP, minP, seed, ignoreEos } = flags;
  const sampling = { temperature, topK, topP, minP, ignoreEos: ignoreEos ?? false, ...(seed !== undefined && { seed }), ...(maxTokens !== undefined && { maxTokens }) };
  for await (const piece of llm.stream(next.prompt, { ...sampling, signal })) {
    if (firstAt === undefined) {
      firstAt = performance.now();
      firstTokens = piece.tokenIds.length;
    }
    tokens += piece.tokenIds.length;
    text += piece.text;
    process.stdout.write(piece.text);
    finish = piece.finishReason ?? finish;
  }
  process.stdout.write(text.endsWith('\n') ? '' : '\n');
  session.record(user, text, images);
  if (finish === 'abort') process.stderr.write('loom: stopped\n');
  if (flags.verbose) {
    const end = performance.now();
    const decodeS = (end - (firstAt ?? end)) / 1000;
    // the tokens after the first piece, over the time after it (the prompt's time excluded)
    const rate = tokens > firstTokens && decodeS > 0 ? ((tokens - firstTokens) / decodeS).toFixed(1) : '-';
    const prompt = next.images > 0 ? `${next.textTokens} text tokens and ${next.images} image${next.images > 1 ? 's' : ''}` : `${next.textTokens} tokens`;
    process.stderr.write(`loom: prompt ${prompt}, reply ${tokens} tokens in ${((end - started) / 1000).toFixed(2)} s (${rate} tokens/s), ${finish ?? 'done'}\n`);
  }
}
