// The pipeline's run, directly (no HTTP): a resolved request through an engine and back as
// text events: stop strings, n completions, the engine's refusal as a domain error; and the
// library's and CLI's door (localContext over an engine on this thread) end to end.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { EngineClient, EngineInfo } from '../../src/engine/client.js';
import { createEngineCore } from '../../src/engine/create.js';
import { InProcessEngineClient } from '../../src/engine/in-process-client.js';
import type { RequestDelta } from '../../src/engine/protocol.js';
import { RequestStream } from '../../src/engine/request-stream.js';
import type { SamplingParams } from '../../src/engine/sampling-params.js';
import { EngineRefusedError } from '../../src/errors.js';
import { loadModel } from '../../src/model/load.js';
import type { LoadedModel } from '../../src/model/load.js';
import { localContext } from '../../src/pipeline/context.js';
import { newSummary, runPrompt } from '../../src/pipeline/generate.js';
import type { CompletionEvent } from '../../src/pipeline/generate.js';
import { resolveRequest } from '../../src/pipeline/request.js';
import type { RequestSpec } from '../../src/pipeline/request.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const path = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);

/** An engine that answers every request with the given tokens, one delta per token per completion (or refuses). */
class ScriptedEngine {
  readonly aborted: string[] = [];
  readonly added: { id: string; params: SamplingParams }[] = [];
  constructor(
    readonly info: EngineInfo,
    private readonly tokens: readonly number[],
    private readonly refusal?: string,
  ) {}

  add(id: string, _promptIds: readonly number[] | Int32Array, params: SamplingParams): RequestStream {
    this.added.push({ id, params });
    const stream = new RequestStream(id, params.n, () => this.abort(id));
    const delta = (index: number, tokenIds: number[], finishReason?: RequestDelta['finishReason']): RequestDelta => ({ id, index, tokenIds: Int32Array.from(tokenIds), times: new Float64Array(tokenIds.length), ...(finishReason && { finishReason }) });
    if (this.refusal) {
      setImmediate(() => stream.push({ ...delta(0, [], 'abort'), error: this.refusal }));
      return stream;
    }
    // one token per engine step (a macrotask each), so a consumer can stop between them
    const step = (i: number): void => {
      if (i >= this.tokens.length || this.aborted.includes(id)) return;
      for (let c = 0; c < params.n; c++) stream.push(delta(c, [this.tokens[i]!], i === this.tokens.length - 1 ? 'length' : undefined));
      setImmediate(() => step(i + 1));
    };
    setImmediate(() => step(0));
    return stream;
  }

  abort(id: string): void {
    this.aborted.push(id);
  }
}

async function collect(events: AsyncIterable<CompletionEvent>): Promise<Map<number, { text: string; finish?: string; stop?: string | number }>> {
  const out = new Map<number, { text: string; finish?: string; stop?: string | number }>();
  for await (const e of events) {
    const c = out.get(e.index) ?? { text: '' };
    c.text += e.text;
    if (e.finishReason) c.finish = e.finishReason;
    if (e.stopReason !== undefined) c.stop = e.stopReason;
    out.set(e.index, c);
  }
  return out;
}

const spec = (over: Partial<RequestSpec>): RequestSpec => ({ prompts: ['Once'], promptParam: 'prompt', addSpecialTokens: true, maxTokens: undefined, maxTokensParam: 'max_tokens', defaultMaxTokens: 16, sampling: {}, idPrefix: 'gen', ...over });

describe('pipeline generation', () => {
  let model: LoadedModel;
  let info: EngineInfo;
  before(() => {
    model = loadModel(path());
    info = { numBlocks: 64, blockSize: 16, maxModelLen: 256, vocabSize: model.tokenizer.vocabSize, maxNumSeqs: 4, logprobsMode: 'raw_logprobs' };
  });

  it('turns tokens into text per completion, cut at a stop string (which aborts the request in the engine)', async () => {
    const tokens = model.tokenizer.encode('the cat sat on the mat and slept', { addSpecial: false });
    const plain = localContext(new ScriptedEngine(info, tokens) as unknown as EngineClient, model.tokenizer);
    const full = (await collect(runPrompt(plain, await resolveRequest(plain, spec({})), 0, new AbortController().signal, newSummary()))).get(0)!.text;
    assert.match(full, /the cat sat on the mat and slept$/);
    const engine = new ScriptedEngine(info, tokens);
    const ctx = localContext(engine as unknown as EngineClient, model.tokenizer);
    const r = await resolveRequest(ctx, spec({ sampling: { n: 2 }, stop: ['mat'] }));
    assert.equal(engine.added.length, 0, 'resolving sends nothing to the engine');
    const summary = newSummary();
    const out = await collect(runPrompt(ctx, r, 0, new AbortController().signal, summary));
    assert.equal(engine.added[0]!.params, r.prompts[0]!.params, 'the engine gets the resolved parameters themselves');
    for (const i of [0, 1]) assert.deepEqual(out.get(i), { text: full.slice(0, full.indexOf('mat')), finish: 'stop', stop: 'mat' });
    assert.deepEqual(engine.aborted, [r.id]);
    assert.equal(ctx.requests.size, 0, 'unregistered once done');
    assert.ok(summary.completionTokens > 0);
  });

  it("runs to the engine's finish without stop strings", async () => {
    const engine = new ScriptedEngine(info, model.tokenizer.encode('once there was a dog', { addSpecial: false }));
    const ctx = localContext(engine as unknown as EngineClient, model.tokenizer);
    const out = await collect(runPrompt(ctx, await resolveRequest(ctx, spec({})), 0, new AbortController().signal, newSummary()));
    assert.match(out.get(0)!.text, /^ +once there was a dog$/);
    assert.equal(out.get(0)!.finish, 'length');
    assert.deepEqual(engine.aborted, [], 'a request the engine finished is not aborted');
  });

  it("an engine's refusal is an EngineRefusedError, not an HTTP error", async () => {
    const engine = new ScriptedEngine(info, [], 'constrained decoding is unavailable');
    const ctx = localContext(engine as unknown as EngineClient, model.tokenizer);
    const finishes: string[] = [];
    const events = runPrompt(ctx, await resolveRequest(ctx, spec({})), 0, new AbortController().signal, newSummary(), { observer: { onFinish: (reason) => finishes.push(reason) } });
    await assert.rejects(collect(events), (e: unknown) => e instanceof EngineRefusedError && e.message === 'constrained decoding is unavailable');
    assert.deepEqual(finishes, [], 'a refused request never ran: no finish is counted');
  });

  it('the library and CLI door: a real engine on this thread, n above --max-num-seqs, every completion', async () => {
    const engine = new InProcessEngineClient(createEngineCore({ model: path(), backend: 'reference', kvCacheMemory: '16MiB', maxNumSeqs: 2 }, model));
    try {
      const ctx = localContext(engine, model.tokenizer);
      const r = await resolveRequest(ctx, spec({ sampling: { n: 3, temperature: 1, seed: 5, ignoreEos: true }, defaultMaxTokens: 5 }));
      const summary = newSummary();
      const out = await collect(runPrompt(ctx, r, 0, new AbortController().signal, summary));
      assert.deepEqual([...out.keys()].sort(), [0, 1, 2]);
      assert.ok([...out.values()].every((c) => c.finish === 'length'));
      assert.equal(summary.completionTokens, 15);
      assert.equal(summary.promptTokens, r.prompts[0]!.ids.length);
    } finally {
      await engine.close();
    }
  });
});
