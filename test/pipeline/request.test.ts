// The pipeline's resolver, directly (no HTTP): a RequestSpec in, one frozen ResolvedRequest
// or a named domain error (never an HttpError) out.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { EngineClient, EngineInfo } from '../../src/engine/client.js';
import { ContextLengthExceededError, InvalidArgumentError } from '../../src/errors.js';
import { loadModel } from '../../src/model/load.js';
import { localContext } from '../../src/pipeline/context.js';
import type { PipelineContext } from '../../src/pipeline/context.js';
import { contextLimit, resolveRequest } from '../../src/pipeline/request.js';
import type { RequestSpec } from '../../src/pipeline/request.js';
import type { Tokenizer } from '../../src/tokenizer/tokenizer.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const TEMPLATE = '{% if tools %}[tools] {% for t in tools %}{{ t.function.name }} {% endfor %}\n{% endif %}{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}';

/** an engine the resolver only reads the info of */
function infoOnly(info: Partial<EngineInfo>): EngineClient {
  const full: EngineInfo = { numBlocks: 64, blockSize: 16, maxModelLen: 256, vocabSize: 0, maxNumSeqs: 4, logprobsMode: 'raw_logprobs', ...info };
  return { info: full } as EngineClient;
}

const spec = (over: Partial<RequestSpec>): RequestSpec => ({
  prompts: ['Once upon a time'],
  promptParam: 'prompt',
  addSpecialTokens: true,
  maxTokens: undefined,
  maxTokensParam: 'max_tokens',
  defaultMaxTokens: 16,
  sampling: {},
  idPrefix: 'test',
  ...over,
});

describe('resolveRequest', () => {
  let tokenizer: Tokenizer;
  let ctx: PipelineContext;
  before(() => {
    tokenizer = loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!)).tokenizer;
    ctx = localContext(infoOnly({ vocabSize: tokenizer.vocabSize }), tokenizer, TEMPLATE);
  });

  it('resolves text, token ids and chats into one frozen request', async () => {
    const ids = tokenizer.encode('Hello there', { addSpecial: true });
    const r = await resolveRequest(ctx, spec({ prompts: ['Once upon a time', ids, { messages: [{ role: 'user', content: 'Hi' }] }], sampling: { temperature: 0, n: 2 } }));
    assert.ok(Object.isFrozen(r) && Object.isFrozen(r.prompts) && r.prompts.every((p) => Object.isFrozen(p.params)));
    assert.match(r.id, /^test-/);
    assert.deepEqual(r.prompts[0]!.ids, tokenizer.encode('Once upon a time', { addSpecial: true }));
    assert.deepEqual(r.prompts[1]!.ids, ids);
    assert.equal(r.prompts[1]!.text, tokenizer.decode(ids, { skipSpecial: false }));
    // a chat is rendered by the template, and its text is what is tokenized (no BOS added: the spec says none for chats' callers)
    assert.equal(r.prompts[2]!.text, '[user] Hi\n[assistant]');
    assert.ok(r.prompts.every((p) => p.params.n === 2 && p.params.temperature === 0 && p.params.maxTokens === 16));
  });

  it('fills max tokens from the context, and refuses what does not fit with ContextLengthExceededError naming the field', async () => {
    const limit = contextLimit(ctx);
    assert.equal(limit, 256);
    const r = await resolveRequest(ctx, spec({ defaultMaxTokens: 'context' }));
    assert.equal(r.prompts[0]!.params.maxTokens, limit - r.prompts[0]!.ids.length);
    const tooLong = Array.from({ length: limit }, () => 5);
    await assert.rejects(resolveRequest(ctx, spec({ prompts: [tooLong], promptParam: 'input_ids' })), (e: unknown) => e instanceof ContextLengthExceededError && e.param === 'input_ids' && /maximum context length is 256 tokens/.test(e.message));
    await assert.rejects(resolveRequest(ctx, spec({ maxTokens: limit, maxTokensParam: 'max_completion_tokens' })), (e: unknown) => e instanceof ContextLengthExceededError && e.param === 'max_completion_tokens');
    // the KV cache bounds the context too
    const small = localContext(infoOnly({ vocabSize: tokenizer.vocabSize, numBlocks: 2 }), tokenizer);
    assert.equal(contextLimit(small), 32);
  });

  it('refuses bad values with InvalidArgumentError naming the field as the caller spells it', async () => {
    const refuses = async (s: Partial<RequestSpec>, param: string, message: RegExp) =>
      assert.rejects(resolveRequest(ctx, spec(s)), (e: unknown) => e instanceof InvalidArgumentError && e.param === param && message.test(e.message), `${param}`);
    await refuses({ sampling: { topP: 2 } }, 'top_p', /top_p must be in \(0, 1\]/);
    await refuses({ sampling: { logprobs: 30 }, paramNames: { logprobs: 'return_logprob' } }, 'return_logprob', /logprobs must be null or an integer in \[0, 20\]/);
    await refuses({ prompts: [[tokenizer.vocabSize]] }, 'prompt', /outside the vocabulary/);
    await refuses({ prompts: [[]] }, 'prompt', /must not be empty/);
    await refuses({ truncatePromptTokens: 0 }, 'truncate_prompt_tokens', /must be -1 or in \[1, 256\]/);
    await refuses({ prompts: [{ messages: [{ role: 'assistant', content: 'Hi' }], continueFinalMessage: true }] }, 'continue_final_message', /Cannot set both/);
  });

  it("applies the caller's limits: the server's, or none for the library", async () => {
    const server: PipelineContext = { ...ctx, options: { maxModelLen: 256, maxPendingRequests: 8, limits: { maxN: 4 } } };
    await assert.rejects(resolveRequest(server, spec({ sampling: { n: 5 } })), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'n' && /--max-n/.test(e.message));
    await assert.rejects(resolveRequest(server, spec({ prompts: ['a', 'b', 'c'], sampling: { n: 3 } })), (e: unknown) => e instanceof InvalidArgumentError && /asks for 9 sequences/.test(e.message));
    const r = await resolveRequest(ctx, spec({ sampling: { n: 40 }, stop: Array.from({ length: 40 }, (_, i) => `s${i}`) }));
    assert.equal(r.prompts[0]!.params.n, 40);
    assert.equal(r.stop.length, 40);
  });

  it('plans tools: in the template, a forced choice as the grammar, refusals named', async () => {
    const weather = { type: 'function' as const, function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
    const chat = { messages: [{ role: 'user', content: 'Rain?' }] };
    const named = await resolveRequest(ctx, spec({ prompts: [chat], tools: { tools: [weather], tool_choice: { type: 'function', function: { name: 'weather' } } } }));
    assert.equal(named.prompts[0]!.text, '[tools] weather [user] Rain?\n[assistant]');
    assert.deepEqual(named.tools?.forced?.tools, { kind: 'named', name: 'weather' });
    assert.equal(named.prompts[0]!.params.grammar?.type, 'json_schema');
    const plain = await resolveRequest(ctx, spec({ prompts: [chat] }));
    assert.equal(plain.tools, undefined);
    assert.equal(plain.prompts[0]!.text, '[user] Rain?\n[assistant]');
    await assert.rejects(
      resolveRequest(ctx, spec({ prompts: [chat], tools: { tools: [weather], tool_choice: 'required' }, sampling: { grammar: { type: 'json_object' } }, paramNames: { grammar: 'response_format' } })),
      (e: unknown) => e instanceof InvalidArgumentError && e.param === 'response_format' && /cannot be combined with tool_choice/.test(e.message),
    );
    await assert.rejects(resolveRequest(ctx, spec({ prompts: [chat], tools: { tools: [weather, weather] } })), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'tools');
    await assert.rejects(resolveRequest(ctx, spec({ prompts: [chat], tools: { tool_choice: 'required' } })), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'tool_choice');
  });

  it('keeps the last k prompt tokens, and refuses a client id already running', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => i + 3);
    const r = await resolveRequest(ctx, spec({ prompts: [ids], truncatePromptTokens: 5 }));
    assert.deepEqual(r.prompts[0]!.ids, ids.slice(-5));
    const running: PipelineContext = { ...ctx, requests: new Map([['test-mine', { abort: () => {} }]]) };
    await assert.rejects(resolveRequest(running, spec({ clientRequestId: 'mine' })), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'request_id');
    assert.equal((await resolveRequest(ctx, spec({ clientRequestId: 'mine' }))).id, 'test-mine');
  });
});
