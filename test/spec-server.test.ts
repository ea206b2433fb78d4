// Speculative decoding behind the HTTP API: the official client gets the text it gets
// without speculation, cut at a stop string, and /metrics carries vLLM's spec_decode_* counters.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { WorkerEngineClient } from '../src/engine/worker-client.js';
import { loadModel } from '../src/model/load.js';
import { buildApp } from '../src/server/app.js';
import { PROJECT_ROOT } from './fixtures/index.js';

const MODEL = 'stories';
const path = join(PROJECT_ROOT, 'models', 'stories260K.gguf');
const PROMPT = 'Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom';

async function startServer(speculativeConfig?: string) {
  const engine = await WorkerEngineClient.start({ model: path, backend: 'reference', kvCacheMemory: '16MiB', ...(speculativeConfig && { speculativeConfig }) });
  const { app } = buildApp({
    engine,
    tokenizer: loadModel(path).tokenizer,
    options: { servedModelName: MODEL, maxModelLen: engine.info.maxModelLen, maxPendingRequests: 64, slowClientTimeoutMs: 5_000, bodyLimitBytes: 1 << 20 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none', maxRetries: 0 });
  return { port, client, close: async () => (await app.close(), await engine.close()) };
}

type Server = Awaited<ReturnType<typeof startServer>>;
const greedy = { temperature: 0, ignore_eos: true } as Record<string, unknown>;

describe('speculative decoding over HTTP', () => {
  let plain: Server;
  let spec: Server;
  before(async () => {
    [plain, spec] = await Promise.all([startServer(), startServer('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1}')]);
  });
  after(async () => {
    await Promise.all([plain.close(), spec.close()]);
  });

  it('the same text as without speculation, streamed or not, and cut at a stop string', async () => {
    const expected = (await plain.client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 64, ...greedy })).choices[0]!.text;
    const got = (await spec.client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 64, ...greedy })).choices[0]!.text;
    assert.equal(got, expected);
    let streamed = '';
    for await (const chunk of await spec.client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 64, stream: true, ...greedy })) streamed += chunk.choices[0]?.text ?? '';
    assert.equal(streamed, expected);
    // a stop string well inside the text: nothing after it, however many tokens a step accepted
    const stop = expected.slice(30, 36);
    const cut = await spec.client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 64, stop: [stop], ...greedy });
    assert.equal(cut.choices[0]!.text, expected.slice(0, expected.indexOf(stop)));
    assert.equal(cut.choices[0]!.finish_reason, 'stop');
  });

  it('/metrics counts drafts, draft tokens and accepted tokens with the engine label', async () => {
    const text = await (await fetch(`http://127.0.0.1:${spec.port}/metrics`)).text();
    const value = (name: string): number => {
      const m = new RegExp(`^vllm:${name}\\{model_name="${MODEL}",engine="0"\\} (\\d+)$`, 'm').exec(text);
      assert.ok(m, `${name} in /metrics`);
      return Number(m[1]);
    };
    const drafts = value('spec_decode_num_drafts_total');
    const draftTokens = value('spec_decode_num_draft_tokens_total');
    const accepted = value('spec_decode_num_accepted_tokens_total');
    assert.ok(drafts > 0 && draftTokens >= drafts && accepted > 0 && accepted <= draftTokens, `${drafts} drafts, ${draftTokens} tokens, ${accepted} accepted`);
    assert.match(text, /^vllm:spec_decode_num_accepted_tokens_per_pos\{model_name="stories",engine="0",position="0"\} \d+$/m);
    const plainText = await (await fetch(`http://127.0.0.1:${plain.port}/metrics`)).text();
    assert.match(plainText, /^vllm:spec_decode_num_drafts_total\{model_name="stories",engine="0"\} 0$/m, 'zero without speculation');
  });
});
