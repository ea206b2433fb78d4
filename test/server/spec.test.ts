// Speculative decoding behind the HTTP API and the CLI: the official client gets the text it
// gets without speculation, cut at a stop string; /metrics carries vLLM's spec_decode_*
// counters; `loom generate --speculative-config` prints llama.cpp's story.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { WorkerEngineClient } from '../../src/engine/worker-client.js';
import { loadModel } from '../../src/model/load.js';
import { buildApp } from '../../src/server/app.js';
import { LLM } from '../../src/llm.js';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import type { SpecReport } from '../../src/bench/spec.js';

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

// llama.cpp's greedy continuation of "Once upon a time" (as test/cli.test.ts)
const STORY = ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily';

describe('the library with speculativeConfig', () => {
  it("LLM.load takes vLLM's config and generates llama.cpp's story; a bad one is refused", async () => {
    const llm = await LLM.load(path, { backend: 'reference', kvCacheMemory: '16MiB', speculativeConfig: { method: 'ngram', num_speculative_tokens: 3, prompt_lookup_min: 1 } });
    try {
      assert.equal((await llm.generate('Once upon a time', { maxTokens: 60, temperature: 0 })).text, STORY);
    } finally {
      await llm.close();
    }
    await assert.rejects(LLM.load(path, { backend: 'reference', kvCacheMemory: '16MiB', speculativeConfig: { method: 'ngram' } }), /--speculative-config: "num_speculative_tokens" is required/);
  });

  it('a draft model by path (the model as its own draft), loaded beside the target, gives the same story', async () => {
    const llm = await LLM.load(path, { kvCacheMemory: '16MiB', speculativeConfig: { method: 'draft_model', model: path, num_speculative_tokens: 3 } });
    try {
      assert.equal((await llm.generate('Once upon a time', { maxTokens: 60, temperature: 0 })).text, STORY);
    } finally {
      await llm.close();
    }
    const other = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
    await assert.rejects(LLM.load(path, { kvCacheMemory: '16MiB', speculativeConfig: { method: 'draft_model', model: other, num_speculative_tokens: 3 } }), /does not share the vocabulary of .*stories260K\.gguf/);
    await assert.rejects(LLM.load(path, { kvCacheMemory: '16MiB', speculativeConfig: { model: 'no-such-draft.gguf', num_speculative_tokens: 3 } }), /--speculative-config: draft model no-such-draft\.gguf: no such file or folder/);
  });
});

describe('loom serve with a draft model', () => {
  it('prints the draft cache and the ignored fields at start, serves the same story, counts drafts in /metrics', async () => {
    const config = JSON.stringify({ model: path, num_speculative_tokens: 3, draft_tensor_parallel_size: 1 });
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'serve', '--model', path, '--port', '0', '--kv-cache-memory', '16MiB', '--speculative-config', config], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.setEncoding('utf8');
    try {
      const port = await new Promise<number>((resolve, reject) => {
        child.stderr.on('data', (chunk: string) => {
          log += chunk;
          const m = /on http:\/\/[^:]+:(\d+)/.exec(log);
          if (m && /"draft_tensor_parallel_size" is ignored/.test(log)) resolve(Number(m[1]));
        });
        child.once('exit', () => reject(new Error(`serve exited early: ${log}`)));
      });
      assert.match(log, /loom: speculative decoding: draft model .*stories260K\.gguf \(5 layers, hidden 64\), K 3; its KV cache \d+ blocks of 16 tokens = [\d.]+ MiB of --kv-cache-memory/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 60, temperature: 0 }),
      });
      assert.equal(((await res.json()) as { choices: { text: string }[] }).choices[0]!.text, STORY);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const m = /^vllm:spec_decode_num_accepted_tokens_total\{[^}]*\} (\d+)$/m.exec(metrics);
      assert.ok(m && Number(m[1]) > 0, 'accepted draft tokens are counted');
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});

describe('loom generate --speculative-config', () => {
  const loom = (...args: string[]) => spawnSync(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), ...args], { encoding: 'utf8', timeout: 120_000 });

  it("prints llama.cpp's greedy stories260K story with speculation on", () => {
    const r = loom('generate', '--model', path, '--prompt', 'Once upon a time', '--temperature', '0', '--max-tokens', '60', '--speculative-config', '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1}');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, STORY + '\n');
  });

  it('a bad config is one line naming the option and the field, exit 1', () => {
    const r = loom('generate', '--model', path, '--prompt', 'x', '--speculative-config', '{"method": "ngram", "num_speculative_tokens": -1}');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^loom: --speculative-config: "num_speculative_tokens" must be an integer in \[1, 64\], got -1\n$/);
  });
});

describe('loom bench spec', () => {
  it('reports drafts that add up, the same tokens with and without, and a verify cost per batch size and length', () => {
    const verifyModel = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen2-q8_0')!);
    const args = ['--output-len', '24', '--repeat-runs', '1', '-k', '2', '--verify-model', verifyModel, '--batch-sizes', '1,2', '--context', '16', '--backend', 'reference', '--json'];
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'bench', 'spec', ...args], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as SpecReport;
    assert.deepEqual(report.prompts.map((p) => p.name), ['retell', 'list', 'edit', 'own']);
    for (const p of report.prompts) {
      assert.ok(p.sameTokens, p.name);
      assert.equal(p.outputTokens, 24);
      assert.ok(p.acceptedTokens <= p.draftTokens && p.draftTokens <= 2 * p.drafts, JSON.stringify(p));
      // each decode step emits 1 + its accepted drafts (one fewer when a stop lands on an accepted draft)
      const steps = p.stepsByDraftLength.reduce((a, b) => a + b, 0);
      assert.ok(steps >= p.outputTokens - 1 - p.acceptedTokens && steps <= p.outputTokens - p.acceptedTokens, JSON.stringify(p));
      assert.equal(p.stepsByDraftLength.length, 3);
    }
    assert.deepEqual(report.verify.map((v) => v.batchSize), [1, 2]);
    for (const v of report.verify) assert.ok(v.msByTokens.length === 3 && v.msByTokens.every((ms) => ms > 0));
    assert.ok(report.predicted.every((x) => x.speedup > 0));
  });

  it('--draft-model: drafts with it (the model as its own draft accepts every draft) and times its steps', () => {
    const args = ['--output-len', '24', '--repeat-runs', '1', '-k', '2', '--draft-model', path, '--batch-sizes', '1', '--context', '16', '--json'];
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'bench', 'spec', ...args], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as SpecReport;
    for (const p of report.prompts) {
      assert.ok(p.sameTokens, p.name);
      assert.ok(p.drafts > 0 && p.acceptedTokens === p.draftTokens, JSON.stringify(p));
    }
    assert.equal(report.settings.draftModel, path);
    assert.deepEqual(report.verify.map((v) => v.msByTokens.length), [3]);
    assert.ok(report.draftCost.length === 1 && report.draftCost[0]!.stepMs > 0);
  });
});
