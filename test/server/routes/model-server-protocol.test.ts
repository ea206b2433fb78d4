// The Gateway API Inference Extension's model-server protocol, as its Endpoint Picker reads a
// replica: the table below is copied from docs/proposals/003-model-server-protocol/README.md of
// kubernetes-sigs/gateway-api-inference-extension at v1.6.0 (commit 84436a96), "Metrics
// Reporting", with the vLLM column loom serves. Each metric is checked for its type and its
// semantics while requests queue and run; readiness (/ready) is checked apart from liveness.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fixtureBy, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

interface ProtocolMetric {
  readonly metric: string;
  readonly type: 'gauge';
  readonly optional: boolean;
  readonly vllm: string;
  /** for labelled metrics, the label carrying the value */
  readonly label?: string;
}

// | Metric | Type | Description | vLLM metric |
const PROTOCOL_V1_6_0: readonly ProtocolMetric[] = [
  { metric: 'TotalQueuedRequests', type: 'gauge', optional: false, vllm: 'vllm:num_requests_waiting' }, // the current total number of requests in the queue
  { metric: 'TotalRunningRequests', type: 'gauge', optional: false, vllm: 'vllm:num_requests_running' }, // requests actively being served
  { metric: 'KVCacheUtilization', type: 'gauge', optional: false, vllm: 'vllm:kv_cache_usage_perc' }, // the current KV cache utilization
  { metric: 'BlockSize', type: 'gauge', optional: true, vllm: 'vllm:cache_config_info', label: 'block_size' }, // block size in tokens, for the prefix cache scorer
  { metric: 'NumGPUBlocks', type: 'gauge', optional: true, vllm: 'vllm:cache_config_info', label: 'num_gpu_blocks' }, // total blocks of the KV cache
];
// LoRA: "Model servers that support dynamic LoRA serving" MUST expose vllm:lora_requests_info.
// loom serves no adapters, so it must not claim to (an EPP would wait for adapters that never load).

interface Sample { readonly name: string; readonly labels: Record<string, string>; readonly value: number }

function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

describe('model-server protocol (inference extension v1.6.0)', () => {
  let server: TestServer;
  const scrape = async () => parseExposition(await (await fetch(`${server.url}/metrics`)).text());
  const value = (s: Sample[], name: string) => s.find((x) => x.name === name && x.labels.model_name === 'fixture')!.value;

  before(async () => {
    // one sequence at a time: the others must show as queued
    server = await startTestServer(fixtureBy((f) => f.name === 'llama-q8_0'), {}, { maxNumSeqs: 1 });
  });
  after(() => server.close());

  it('serves every metric of the table with its type, and no LoRA info', async () => {
    const { types, samples } = await scrape();
    for (const m of PROTOCOL_V1_6_0) {
      assert.equal(types.get(m.vllm), m.type, `${m.metric} (${m.vllm}) is a ${m.type}`);
      const s = samples.filter((x) => x.name === m.vllm);
      assert.ok(s.length > 0, `${m.metric}: ${m.vllm} has a sample`);
      if (m.label) assert.ok(s.every((x) => x.labels[m.label!] !== undefined && x.value === 1), `${m.metric}: label ${m.label}, value 1`);
    }
    assert.ok(!samples.some((s) => s.name === 'vllm:lora_requests_info'));
  });

  it('queued, running and KV utilization follow the load; block size and count are the engine\'s', async () => {
    const { samples: idle } = await scrape();
    const info = idle.find((s) => s.name === 'vllm:cache_config_info')!;
    assert.equal(Number(info.labels.block_size), server.engine.info.blockSize);
    assert.equal(Number(info.labels.num_gpu_blocks), server.engine.info.numBlocks);
    assert.equal(value(idle, 'vllm:num_requests_running'), 0);
    assert.equal(value(idle, 'vllm:num_requests_waiting'), 0);

    const body = (i: number) => ({ model: 'fixture', prompt: `request ${i} of three`, max_tokens: 200, temperature: 0, ignore_eos: true, stream: true });
    // the first answer's status line comes with its first token; the other two wait behind it
    const pending = [0, 1, 2].map((i) => server.post('/v1/completions', body(i)));
    const first = (await pending[0]!).body!.getReader();
    await first.read();
    let busy = (await scrape()).samples;
    for (let i = 0; i < 100 && value(busy, 'vllm:num_requests_waiting') < 2; i++) busy = (await sleep(20), await scrape()).samples; // the others arrive
    assert.equal(value(busy, 'vllm:num_requests_running'), 1);
    assert.equal(value(busy, 'vllm:num_requests_waiting'), 2);
    const usage = value(busy, 'vllm:kv_cache_usage_perc');
    assert.ok(usage > 0 && usage <= 1, `KV utilization ${usage} is a fraction in (0, 1] while a request runs`);
    const drain = async (r: ReadableStreamDefaultReader<Uint8Array>) => { for (let x = await r.read(); !x.done; x = await r.read()); };
    await drain(first);
    for (const p of pending.slice(1)) await drain((await p).body!.getReader());
    await sleep(20);
    const { samples: done } = await scrape();
    assert.equal(value(done, 'vllm:num_requests_running'), 0);
    assert.equal(value(done, 'vllm:num_requests_waiting'), 0);
  });

  it('/ready is readiness (engine running), /health liveness', async () => {
    assert.equal((await fetch(`${server.url}/ready`)).status, 200);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  });
});
