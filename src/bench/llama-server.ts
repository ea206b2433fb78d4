// llama.cpp's own `llama-server`, built from the source node-llama-cpp ships (its git
// bundle in oracle/node_modules/node-llama-cpp/llama/), for the CPU of this machine
// (GGML_NATIVE), without network (LLAMA_CURL off), once: the binary is cached under
// $LOOM_CACHE/llama-server/<commit>/ (default ~/.cache/loom). Then started as a child
// process on a free port, ready when /health answers 200.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LoomError } from '../errors.js';
import { defaultCacheDir } from '../model/hub-ref.js';
import type { RunningServer } from './loom-server.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const LLAMA_BUNDLE = join(ROOT, 'oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle');

export interface LlamaServerBuild {
  readonly binary: string;
  readonly commit: string;
  /** whether this call built it (else it was cached) */
  readonly built: boolean;
}

function have(tool: string): boolean {
  return spawnSync(tool, ['--version'], { stdio: 'ignore' }).status === 0;
}

function run(cmd: string, args: readonly string[], logFile: string, cwd?: string): Promise<void> {
  return new Promise((ok, fail) => {
    const out = createWriteStream(logFile, { flags: 'a' });
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(out);
    child.stderr.pipe(out);
    child.on('error', (e) => fail(new LoomError(`${cmd} did not start: ${e.message}`)));
    child.on('exit', (code) => (code === 0 ? ok() : fail(new LoomError(`${cmd} ${args.join(' ')} failed (exit ${String(code)}); see ${logFile}`))));
  });
}

/** The cached llama-server binary, built first if it is not there (~8 min on 2 cores). */
export async function ensureLlamaServer(log: (line: string) => void, bundle = LLAMA_BUNDLE, cacheDir = defaultCacheDir()): Promise<LlamaServerBuild> {
  if (!existsSync(bundle)) {
    throw new LoomError(`llama.cpp's source is not installed: ${bundle} is missing (npm run bench:peer installs node-llama-cpp into oracle/, or run npm --prefix oracle install)`);
  }
  if (!have('git')) throw new LoomError('building llama-server needs git (to open the source bundle); install git');
  const heads = spawnSync('git', ['bundle', 'list-heads', bundle], { encoding: 'utf8' });
  const commit = /^([0-9a-f]{40}) HEAD$/m.exec(heads.stdout ?? '')?.[1];
  if (heads.status !== 0 || !commit) throw new LoomError(`${bundle} is not a git bundle with a HEAD: ${(heads.stderr ?? '').trim()}`);
  const dir = join(cacheDir, 'llama-server', commit.slice(0, 12));
  const binary = join(dir, 'build', 'bin', 'llama-server');
  if (existsSync(binary)) return { binary, commit, built: false };
  if (!have('cmake')) throw new LoomError('building llama-server needs cmake (3.14 or newer) and a C++17 compiler; install cmake (Debian: apt-get install cmake)');
  mkdirSync(dir, { recursive: true });
  const logFile = join(dir, 'build.log');
  const src = join(dir, 'src');
  if (!existsSync(join(src, 'CMakeLists.txt'))) {
    rmSync(src, { recursive: true, force: true });
    log(`llama-server: cloning ${bundle} (${commit.slice(0, 12)}) into ${src}`);
    await run('git', ['clone', '--quiet', bundle, src], logFile);
  }
  const gen = have('ninja') ? ['-G', 'Ninja'] : [];
  log(`llama-server: building (CPU, native ISA, no network; several minutes on few cores; log: ${logFile})`);
  const build = join(dir, 'build');
  await run('cmake', ['-S', src, '-B', build, ...gen, '-DCMAKE_BUILD_TYPE=Release', '-DGGML_NATIVE=ON', '-DLLAMA_CURL=OFF', '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF'], logFile);
  const jobs = String(Math.max(1, (await import('node:os')).availableParallelism()));
  await run('cmake', ['--build', build, '--target', 'llama-server', '-j', jobs], logFile);
  if (!existsSync(binary)) throw new LoomError(`the build finished but ${binary} is not there; see ${logFile}`);
  return { binary, commit, built: true };
}

/** What a report of loom serve against llama-server records of the two servers and of the machine's load around the run. */
export interface ServersRun {
  readonly llamaServer: { readonly binary: string; readonly args: readonly string[] };
  readonly loomArgs: readonly string[];
  readonly loadBefore: number;
  readonly loadAfter: number;
}

export interface LlamaServerOptions {
  readonly threads: number;
  /** slots (-np) */
  readonly parallel: number;
  /** tokens per slot: the context is parallel × this */
  readonly slotContext: number;
  /** more llama-server flags (--mmproj FILE; the embeddings benchmark's --embeddings, -b, -ub) */
  readonly extraArgs?: readonly string[];
}

export function llamaServerArgs(model: string, port: number, o: LlamaServerOptions): string[] {
  return ['-m', model, '--host', '127.0.0.1', '--port', String(port), '-np', String(o.parallel), '-cb', '-t', String(o.threads), '-tb', String(o.threads),
    '-c', String(o.parallel * o.slotContext), '--no-webui', '-ngl', '0', ...(o.extraArgs ?? [])];
}

/** a TCP port nothing listens on now (127.0.0.1) */
export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  srv.close();
  await once(srv, 'close');
  return port;
}

/** llama-server on a free port, once /health answers 200 (it answers 503 while loading) */
export async function startLlamaServer(binary: string, model: string, o: LlamaServerOptions, log: (line: string) => void): Promise<RunningServer & { readonly args: readonly string[] }> {
  const port = await freePort();
  const args = llamaServerArgs(model, port, o);
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    text += chunk;
    if (text.length > 1 << 20) text = text.slice(-(1 << 19));
  });
  const exited = once(child, 'exit');
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  let dead = false;
  void exited.then(() => (dead = true));
  for (;;) {
    if (dead) throw new LoomError(`llama-server exited before it was ready: ${text.trim().split('\n').slice(-3).join(' | ')}`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new LoomError(`llama-server did not answer /health within 120 s: ${text.trim().split('\n').pop() ?? ''}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  log(`llama-server: ${binary} ${args.join(' ')}`);
  return { url, log: () => text, stop, args };
}
