// The library API, imported by package name as a user would.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ContextLengthExceededError, InvalidArgumentError, LLM } from 'loom-llm';
import { GOLDEN_DIR, ggufFixturePath } from './fixtures/index.js';
import { readGolden } from './fixtures/golden.js';
import { GGUF_FIXTURES } from './fixtures/recipe.js';

const FIXTURE = 'llama-q4_k';

describe("import { LLM } from 'loom-llm'", () => {
  let llm: LLM;
  before(async () => {
    llm = await LLM.load(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!), { backend: 'reference', kvCacheMemory: '16MiB' });
  });
  after(() => llm.close());

  it("generate gives llama.cpp's greedy tokens", async () => {
    const g = readGolden(GOLDEN_DIR, FIXTURE).prompts[1]!;
    const r = await llm.generate(g.prompt, { temperature: 0, ignoreEos: true, maxTokens: g.tokens.length });
    assert.deepEqual(r.tokenIds, g.tokens);
    assert.equal(r.text, llm.model.tokenizer.decode(g.tokens));
    assert.equal(r.finishReason, 'length');
  });

  it('stream yields pieces as they come, and an AbortSignal stops it', async () => {
    const controller = new AbortController();
    const pieces = [];
    for await (const piece of llm.stream('Once upon a time', { temperature: 0, ignoreEos: true, maxTokens: 300, signal: controller.signal })) {
      pieces.push(piece);
      if (pieces.length === 3) controller.abort();
    }
    assert.ok(pieces.length >= 3 && pieces.length < 300);
    assert.equal(pieces.at(-1)!.finishReason, 'abort');
  });

  it('chat applies the template', async () => {
    const r = await llm.chat([{ role: 'user', content: 'Hi there' }], { temperature: 0, maxTokens: 3, ignoreEos: true });
    assert.equal(r.completionTokens, 3);
    assert.ok(r.promptTokens > 3);
    assert.equal(r.tokenIds.length, 3);
  });

  it("refuses with the library's errors, never HTTP ones", async () => {
    const full = Array.from({ length: llm.engine.info.maxModelLen }, () => 5);
    await assert.rejects(llm.generate(full), (e: unknown) => e instanceof ContextLengthExceededError && /maximum context length/.test(e.message));
    await assert.rejects(llm.generate('Hi', { topP: 2 }), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'top_p');
    // maxTokens is a cap: past the context, the completion ends where the context does
    const long = await llm.generate(full.slice(4), { temperature: 0, ignoreEos: true, maxTokens: 100 });
    assert.equal(long.completionTokens, 4);
    assert.equal(long.finishReason, 'length');
  });
});
