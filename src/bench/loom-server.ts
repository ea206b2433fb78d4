// A `loom serve` child process for benchmarks: started on a free port, ready once /health
// answers 200, stopped with SIGTERM (SIGKILL after 30 s).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { LoomError } from '../errors.js';

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));

export interface RunningServer {
  readonly url: string;
  /** everything the server wrote to stderr so far */
  log(): string;
  stop(): Promise<void>;
}

/** `loom serve --model model --port 0 …extraArgs` as a child process, once /health answers 200 */
export async function startLoomServer(model: string, extraArgs: readonly string[], log: (line: string) => void): Promise<RunningServer> {
  const args = [CLI, 'serve', '--model', model, '--port', '0', ...extraArgs];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    text += chunk;
    // the server's own 10-second throughput lines would only interleave with the progress bar
    for (const line of chunk.split('\n')) if (line.trim() && !/tokens\/s generated/.test(line)) log(`[serve] ${line}`);
  });
  const exited = once(child, 'exit');
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const onData = (): void => {
        const m = /on http:\/\/[^\s]*:(\d+)/.exec(text);
        if (m) resolve(Number(m[1]));
      };
      child.stderr!.on('data', onData);
      void exited.then(([code]) => reject(new LoomError(`loom serve exited (${String(code)}) before listening: ${text.trim().split('\n').pop() ?? ''}`)));
      setTimeout(() => reject(new LoomError('loom serve did not start listening within 120 s')), 120_000).unref();
    });
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(url);
    return { url, log: () => text, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new LoomError(`${url}/health did not answer 200 within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
