// Is a refused prompt's memory kept? An in-process server (the engine in its worker, the
// tokenizer pool, real HTTP) gets refused 4 MiB prompts (completions refused by their bytes,
// chats rendered then refused, Ollama generates); the heap is read after full collections
// before and after. V8's `gc` is exposed at run time (the flag, then a fresh context's gc),
// so no node flag is needed.
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { WorkerEngineClient } from '../engine/worker-client.js';
import { LoomError } from '../errors.js';
import { offlineFromEnv } from '../model/hub.js';
import { loadModel } from '../model/load.js';
import { resolveModelArg } from '../model/model-arg.js';
import { buildApp } from '../server/app.js';
import { TokenizerPool } from '../server/tokenizer-pool.js';

export interface RefusedMemory {
  readonly refused: number;
  /** heap used / RSS after full collections, before and after the refused prompts */
  readonly heapBeforeBytes: number;
  readonly heapAfterBytes: number;
  readonly rssBeforeBytes: number;
  readonly rssAfterBytes: number;
}

export async function measureRefusedMemory(modelArg: string, chatTemplate: string, prompt: string, rounds: number): Promise<RefusedMemory> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const { path } = await resolveModelArg(modelArg, { offline: offlineFromEnv(), log: () => {} });
  const model = loadModel(path);
  const engine = await WorkerEngineClient.start({ model: path, backend: 'auto', kvCacheMemory: '64MiB' });
  const tokenizerPool = await TokenizerPool.start({ modelPath: path, size: 1, chatTemplate });
  const { app } = buildApp({
    engine,
    tokenizer: model.tokenizer,
    tokenizerPool,
    options: { servedModelName: 'm', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 64, slowClientTimeoutMs: 5_000, bodyLimitBytes: 8 << 20, chatTemplate },
  });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const post = async (path: string, body: object): Promise<number> => {
      const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', ...body }) });
      await res.arrayBuffer();
      return res.status;
    };
    const settled = async (): Promise<NodeJS.MemoryUsage> => {
      for (let i = 0; i < 3; i++) {
        gc();
        await new Promise((r) => setTimeout(r, 50));
      }
      return process.memoryUsage();
    };
    await post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 2 }); // warm every path once
    const before = await settled();
    let refused = 0;
    for (let i = 0; i < rounds; i++) {
      const statuses = [
        await post('/v1/completions', { prompt, max_tokens: 4 }),
        await post('/v1/chat/completions', { messages: [{ role: 'user', content: prompt }], max_tokens: 4 }),
        await post('/api/generate', { prompt, raw: true, stream: false }),
      ];
      if (statuses.some((s) => s !== 400)) throw new LoomError(`a prompt of ${prompt.length} chars was not refused (${statuses.join(', ')})`);
      refused += statuses.length;
    }
    const after = await settled();
    return { refused, heapBeforeBytes: before.heapUsed, heapAfterBytes: after.heapUsed, rssBeforeBytes: before.rss, rssAfterBytes: after.rss };
  } finally {
    await app.close();
    await engine.close();
  }
}
