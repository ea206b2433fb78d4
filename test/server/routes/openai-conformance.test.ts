// loom's OpenAI endpoints against vLLM's contract, field by field. Sources (vllm-project/vllm):
// - vllm/entrypoints/openai/completion/protocol.py, chat_completion/protocol.py: the extra
//   sampling/request fields (include_stop_str_in_output, truncate_prompt_tokens,
//   allowed_token_ids, bad_words, add_special_tokens, priority, request_id,
//   return_token_ids, continue_final_message, echo) and OpenAIBaseModel's extra="allow"
//   (unknown fields accepted and logged)
// - vllm/entrypoints/openai/completion/serving.py _create_completion_logprobs, chat_completion/
//   serving.py _create_chat_logprobs, vllm/logprobs.py: token strings that join to the text,
//   top_logprobs holding the sampled token (logprobs: 0), prompt_logprobs with rank
// - vllm/v1/engine/processor.py: a non-zero priority without priority scheduling is refused
// - vllm/entrypoints/openai/engine/serving.py: every refusal is a 400 before the stream starts
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SHARED_MODELS } from '../../fixtures/index.js';
import { MODEL, fixtureBy, sseEvents, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

interface Completion {
  id: string;
  choices: {
    text: string;
    finish_reason: string;
    stop_reason: string | number | null;
    logprobs: { tokens: string[]; token_logprobs: number[]; top_logprobs: Record<string, number>[] } | null;
    prompt_logprobs?: (Record<string, { logprob: number; rank: number; decoded_token: string }> | null)[];
    prompt_token_ids?: number[];
    token_ids?: number[];
  }[];
  usage: { prompt_tokens: number; completion_tokens: number };
}
interface ErrorBody {
  error: { message: string; param: string | null };
}

const greedy = { model: MODEL, temperature: 0, ignore_eos: true };

describe('OpenAI endpoints as vLLM: byte-level BPE (qwen3 fixture, ChatML)', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen3-q8_0'));
  });
  after(() => s.close());
  const complete = async (body: object): Promise<Completion> => {
    const res = await s.post('/v1/completions', { ...greedy, prompt: 'Once upon a time', max_tokens: 12, ...body });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as Completion;
  };

  it('refusals that need the vocabulary are 400s naming the field, streamed or not', async () => {
    const vocab = s.model.tokenizer.vocabSize;
    const cases: [object, string][] = [
      [{ stop_token_ids: [vocab + 5] }, 'stop_token_ids'],
      [{ logit_bias: { [String(vocab + 1)]: 5 } }, 'logit_bias'],
      [{ min_tokens: 20, max_tokens: 4 }, 'min_tokens'],
      [{ allowed_token_ids: [vocab] }, 'allowed_token_ids'],
      [{ prompt: [1, vocab] }, 'prompt'],
      [{ max_tokens: 100_000 }, 'max_tokens'],
      [{ priority: 3 }, 'priority'],
      [{ truncate_prompt_tokens: 100_000 }, 'truncate_prompt_tokens'],
    ];
    for (const [body, param] of cases) {
      for (const stream of [false, true]) {
        const res = await s.post('/v1/completions', { ...greedy, prompt: 'hi', max_tokens: 4, stream, ...body });
        assert.equal(res.status, 400, `${JSON.stringify(body)} stream=${stream}`);
        assert.match(res.headers.get('content-type') ?? '', /application\/json/);
        assert.equal(((await res.json()) as ErrorBody).error.param, param, JSON.stringify(body));
      }
    }
    const chat = await s.post('/v1/chat/completions', { ...greedy, messages: [{ role: 'user', content: 'hi' }], stream: true, stop_token_ids: [vocab] });
    assert.equal(chat.status, 400);
    assert.equal(((await chat.json()) as ErrorBody).error.param, 'stop_token_ids');
  });

  it('unknown fields are accepted and logged once per name', async () => {
    await complete({ max_tokens: 2, some_future_field: 1, another: 'x' });
    await complete({ max_tokens: 2, some_future_field: 2 });
    assert.equal(s.log.filter((l) => l.includes('"some_future_field"')).length, 1);
    assert.equal(s.log.filter((l) => l.includes('"another"')).length, 1);
  });

  it('include_stop_str_in_output keeps the stop string at the end of the text', async () => {
    const full = (await complete({})).choices[0]!.text;
    const stop = full.slice(6, 9);
    const cut = full.indexOf(stop);
    const without = (await complete({ stop: [stop] })).choices[0]!;
    const withStop = (await complete({ stop: [stop], include_stop_str_in_output: true })).choices[0]!;
    assert.equal(without.text, full.slice(0, cut));
    assert.equal(withStop.text, full.slice(0, cut + stop.length));
    assert.equal(withStop.stop_reason, stop);
  });

  it('allowed_token_ids: sampling draws only those tokens', async () => {
    const allowed = [5, 17, 42, 99];
    const r = await complete({ temperature: 1, seed: 7, allowed_token_ids: allowed, return_token_ids: true, max_tokens: 16 });
    const ids = r.choices[0]!.token_ids!;
    assert.equal(ids.length, 16);
    assert.ok(ids.every((id) => allowed.includes(id)), `${ids}`);
  });

  it('bad_words: a word of the greedy completion is never generated', async () => {
    const first = await complete({ return_token_ids: true, logprobs: 0 });
    const word = first.choices[0]!.logprobs!.tokens[0]!.trim();
    assert.ok(word.length > 0);
    const again = await complete({ return_token_ids: true, bad_words: [word] });
    const banned = new Set([s.model.tokenizer.encode(word, { addSpecial: false }), s.model.tokenizer.encode(` ${word}`, { addSpecial: false })].filter((ids) => ids.length === 1).map((ids) => ids[0]));
    assert.ok(banned.size > 0);
    assert.ok(again.choices[0]!.token_ids!.every((id) => !banned.has(id)));
    assert.notEqual(again.choices[0]!.token_ids![0], first.choices[0]!.token_ids![0]);
  });

  it('truncate_prompt_tokens keeps the last k prompt tokens', async () => {
    const ids = s.model.tokenizer.encode('Once upon a time there was a little fox', { addSpecial: true });
    const k = 4;
    const truncated = await complete({ prompt: 'Once upon a time there was a little fox', truncate_prompt_tokens: k, return_token_ids: true });
    const direct = await complete({ prompt: ids.slice(-k), return_token_ids: true });
    assert.equal(truncated.usage.prompt_tokens, k);
    assert.deepEqual(truncated.choices[0]!.prompt_token_ids, ids.slice(-k));
    assert.equal(truncated.choices[0]!.text, direct.choices[0]!.text);
  });

  it('cache_salt: only requests with the same salt share prefix-cache blocks', async () => {
    const prompt = 'The same long prompt, long enough to fill a few blocks of sixteen tokens each, again and again.';
    const cached = async (salt?: string): Promise<number> => {
      const r = (await complete({ prompt, max_tokens: 1, ...(salt && { cache_salt: salt }) })) as Completion & { usage: { prompt_tokens_details: { cached_tokens: number } } };
      return r.usage.prompt_tokens_details.cached_tokens;
    };
    await cached();
    assert.ok((await cached()) >= 16, 'unsalted repeats hit the cache');
    assert.equal(await cached('tenant-a'), 0, 'a salt does not see unsalted blocks');
    assert.ok((await cached('tenant-a')) >= 16, 'the same salt hits');
    assert.equal(await cached('tenant-b'), 0, 'another salt does not');
  });

  it('request_id names the response; priority 0 is accepted', async () => {
    const r = await complete({ request_id: 'abc-123', priority: 0, max_tokens: 1 });
    assert.equal(r.id, 'cmpl-abc-123');
  });

  it('return_token_ids: prompt ids as /tokenize gives them, output ids that decode to the text', async () => {
    const r = await complete({ return_token_ids: true });
    const c = r.choices[0]!;
    assert.deepEqual(c.prompt_token_ids, s.model.tokenizer.encode('Once upon a time', { addSpecial: true }));
    assert.equal(c.token_ids!.length, r.usage.completion_tokens);
    assert.equal(s.model.tokenizer.decode(c.token_ids!), c.text);
    const events = await sseEvents(await s.post('/v1/completions', { ...greedy, prompt: 'Once upon a time', max_tokens: 12, stream: true, return_token_ids: true }));
    const chunks = events.filter((e): e is Completion => e !== '[DONE]');
    assert.deepEqual(chunks[0]!.choices[0]!.prompt_token_ids, c.prompt_token_ids);
    assert.deepEqual(chunks.flatMap((e) => e.choices[0]!.token_ids ?? []), c.token_ids);
  });

  it('logprob tokens join to the text; logprobs: 0 gives the sampled token; chat bytes are the token UTF-8', async () => {
    const r = await complete({ logprobs: 0, max_tokens: 16 });
    const c = r.choices[0]!;
    assert.equal(c.logprobs!.tokens.join(''), c.text);
    c.logprobs!.top_logprobs.forEach((top, i) => assert.deepEqual(Object.keys(top), [c.logprobs!.tokens[i]]));
    const two = (await complete({ logprobs: 2 })).choices[0]!.logprobs!;
    assert.ok(two.top_logprobs.every((top, i) => top[two.tokens[i]!] === two.token_logprobs[i] && Object.keys(top).length <= 3));
    const chat = await s.post('/v1/chat/completions', { ...greedy, messages: [{ role: 'user', content: 'hi' }], max_tokens: 10, logprobs: true, top_logprobs: 1 });
    const body = (await chat.json()) as { choices: { message: { content: string }; logprobs: { content: { token: string; bytes: number[] }[] } }[] };
    const content = body.choices[0]!.logprobs.content;
    assert.equal(content.map((t) => t.token).join(''), body.choices[0]!.message.content);
    assert.equal(Buffer.from(content.flatMap((t) => t.bytes)).toString('utf8'), body.choices[0]!.message.content);
    // sampled, the chat's top_logprobs start with the sampled token, as vLLM's position dict does
    const sampled = await s.post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 12, temperature: 2, seed: 5, logprobs: true, top_logprobs: 3 });
    const steps = ((await sampled.json()) as { choices: { logprobs: { content: { token: string; logprob: number; top_logprobs: { token: string; logprob: number }[] }[] } }[] }).choices[0]!.logprobs.content;
    for (const t of steps) {
      assert.equal(t.top_logprobs.length, 3);
      assert.deepEqual([t.top_logprobs[0]!.token, t.top_logprobs[0]!.logprob], [t.token, t.logprob]);
    }
  });

  it('prompt_logprobs entries carry rank and decoded_token', async () => {
    const r = await complete({ prompt_logprobs: 2, max_tokens: 1 });
    const plp = r.choices[0]!.prompt_logprobs!;
    const ids = s.model.tokenizer.encode('Once upon a time', { addSpecial: true });
    assert.equal(plp[0], null);
    for (let i = 1; i < ids.length; i++) {
      const own = plp[i]![String(ids[i])]!;
      assert.ok(Number.isInteger(own.rank) && own.rank >= 1);
      const others = Object.values(plp[i]!).filter((e) => e !== own);
      assert.ok(others.every((e) => e.rank >= 1 && e.rank <= 2));
      if (own.rank > 2) assert.ok(others.every((e) => e.logprob >= own.logprob), 'a token ranked below the top 2 is less likely than them');
    }
  });

  it("/metrics has vLLM's request families, types and buckets, with the engine label", async () => {
    const scrape = async (): Promise<string> => (await fetch(`${s.url}/metrics`)).text();
    const sample = (text: string, series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    const n1 = 'vllm:request_params_n_bucket{le="1",model_name="fixture",engine="0"}';
    const n2 = 'vllm:request_params_n_bucket{le="2",model_name="fixture",engine="0"}';
    const before = await scrape();
    await complete({ max_tokens: 5, n: 2, temperature: 1, seed: 1 });
    const text = await scrape();
    assert.equal(sample(text, n1), sample(before, n1), 'n = 2 is not in the le=1 bucket');
    assert.equal(sample(text, n2), sample(before, n2) + 1, 'one request with n = 2, counted once');
    // vllm/v1/metrics/loggers.py PrometheusStatLogger
    const families: [string, string][] = [
      ['request_prompt_tokens', 'histogram'],
      ['request_generation_tokens', 'histogram'],
      ['iteration_tokens_total', 'histogram'],
      ['request_prefill_time_seconds', 'histogram'],
      ['request_decode_time_seconds', 'histogram'],
      ['request_inference_time_seconds', 'histogram'],
      ['request_params_n', 'histogram'],
      ['request_params_max_tokens', 'histogram'],
      ['cache_config_info', 'gauge'],
      ['engine_sleep_state', 'gauge'],
      ['external_prefix_cache_queries_total', 'counter'],
      ['external_prefix_cache_hits_total', 'counter'],
      ['mm_cache_queries_total', 'counter'],
      ['mm_cache_hits_total', 'counter'],
      ['request_max_num_generation_tokens', 'histogram'],
      ['request_time_per_output_token_seconds', 'histogram'],
    ];
    for (const [name, type] of families) assert.match(text, new RegExp(`^# TYPE vllm:${name} ${type}$`, 'm'), name);
    for (const le of [1, 2, 5, 10, 20, 50, 100, 200]) assert.match(text, new RegExp(`^vllm:request_prompt_tokens_bucket\\{le="${le}",`, 'm'));
    assert.match(text, /^vllm:request_generation_tokens_sum\{model_name="fixture",engine="0"\} [1-9]/m);
    assert.match(text, new RegExp(`^vllm:cache_config_info\\{model_name="fixture",engine="0",block_size="16",num_gpu_blocks="${s.engine.info.numBlocks}",cache_dtype="f16"\\} 1$`, 'm'));
    assert.match(text, /^vllm:engine_sleep_state\{model_name="fixture",engine="0",sleep_state="awake"\} 1$/m);
    // the KV cache's size: tokens, and bytes in its element type (f16 here)
    const info = s.engine.info;
    assert.match(text, new RegExp(`^loom:kv_cache_capacity_tokens\\{model_name="fixture",engine="0"\\} ${info.numBlocks * info.blockSize}$`, 'm'));
    assert.ok(info.kvCacheBytes !== undefined && info.kvCacheBytes > 0);
    assert.match(text, new RegExp(`^loom:kv_cache_bytes\\{model_name="fixture",engine="0"\\} ${info.kvCacheBytes}$`, 'm'));
    assert.match(text, /^vllm:request_max_num_generation_tokens_sum\{model_name="fixture",engine="0"\} [1-9]/m);
    assert.match(text, /^vllm:request_success_total\{model_name="fixture",engine="0",finished_reason="length"\} [1-9]/m);
  });

  it('model may be left out, as in vLLM and llama-server: the served model answers and is named', async () => {
    const c = (await (await s.post('/v1/completions', { temperature: 0, prompt: 'hi', max_tokens: 2 })).json()) as { model: string; choices: unknown[] };
    assert.equal(c.model, MODEL);
    assert.equal(c.choices.length, 1);
    const chat = (await (await s.post('/v1/chat/completions', { temperature: 0, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })).json()) as { model: string };
    assert.equal(chat.model, MODEL);
    assert.equal((await s.post('/v1/completions', { model: 'other', prompt: 'hi', max_tokens: 2 })).status, 404);
  });

  it("responses carry every field of vLLM's, null where vLLM has None", async () => {
    const c = (await complete({})) as unknown as Record<string, unknown> & { choices: Record<string, unknown>[] };
    for (const k of ['service_tier', 'system_fingerprint', 'kv_transfer_params', 'ec_transfer_params', 'metrics']) assert.ok(k in c && c[k] === null, `completion ${k}`);
    for (const k of ['token_ids', 'prompt_logprobs', 'prompt_token_ids', 'routed_experts']) assert.ok(k in c.choices[0]! && c.choices[0]![k] === null, `completion choice ${k}`);
    const res = await s.post('/v1/chat/completions', { ...greedy, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
    const chat = (await res.json()) as Record<string, unknown> & { choices: (Record<string, unknown> & { message: Record<string, unknown> })[] };
    for (const k of ['service_tier', 'system_fingerprint', 'prompt_logprobs', 'prompt_token_ids', 'prompt_text', 'kv_transfer_params', 'ec_transfer_params', 'metrics']) assert.ok(k in chat && chat[k] === null, `chat ${k}`);
    for (const k of ['token_ids', 'routed_experts']) assert.ok(k in chat.choices[0]! && chat.choices[0]![k] === null, `chat choice ${k}`);
    const m = chat.choices[0]!.message;
    for (const k of ['refusal', 'annotations', 'audio', 'function_call', 'reasoning']) assert.ok(k in m && m[k] === null, `message ${k}`);
    assert.deepEqual(m.tool_calls, []);
  });

  it('chat prompt_logprobs are the completion prompt_logprobs of the same prompt ids', async () => {
    const messages = [{ role: 'user', content: 'Once upon a time' }];
    const chat = (await (await s.post('/v1/chat/completions', { ...greedy, messages, max_tokens: 1, prompt_logprobs: 1, return_token_ids: true })).json()) as {
      prompt_token_ids: number[];
      prompt_logprobs: Completion['choices'][0]['prompt_logprobs'];
    };
    assert.equal(chat.prompt_logprobs!.length, chat.prompt_token_ids.length);
    const c = await complete({ prompt: chat.prompt_token_ids, max_tokens: 1, prompt_logprobs: 1 });
    assert.deepEqual(chat.prompt_logprobs, c.choices[0]!.prompt_logprobs);
  });

  it('refuses as vLLM: prompt_logprobs with stream, stream_options without stream; errors are BadRequestError with the status as code', async () => {
    const cases: [string, object, string][] = [
      ['/v1/completions', { prompt: 'a', stream: true, prompt_logprobs: 1 }, '`prompt_logprobs` are not available when `stream=True`.'],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], stream: true, prompt_logprobs: 2 }, '`prompt_logprobs` are not available when `stream=True`.'],
      ['/v1/completions', { prompt: 'a', stream_options: { include_usage: true } }, 'Stream options can only be defined when `stream=True`.'],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], stream: false, stream_options: { include_usage: true } }, 'Stream options can only be defined when `stream=True`.'],
    ];
    for (const [path, body, message] of cases) {
      const res = await s.post(path, { ...greedy, max_tokens: 2, ...body });
      assert.equal(res.status, 400, path);
      const e = ((await res.json()) as { error: { message: string; type: string; code: unknown } }).error;
      assert.deepEqual([e.message, e.type, e.code], [message, 'BadRequestError', 400]);
    }
    const missing = await s.post('/v1/completions', { ...greedy, model: 'nope', prompt: 'a' });
    assert.equal(missing.status, 404);
    assert.deepEqual(((await missing.json()) as { error: object }).error, { message: 'The model `nope` does not exist.', type: 'NotFoundError', param: 'model', code: 404 });
    // prompt_logprobs 0 with stream is accepted, as vLLM does
    assert.equal((await s.post('/v1/completions', { ...greedy, prompt: 'a', max_tokens: 1, stream: true, prompt_logprobs: 0 })).status, 200);
  });

  it('continuous_usage_stats: every chunk carries the usage so far', async () => {
    for (const [path, body] of [
      ['/v1/completions', { prompt: 'Once upon a time' }],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }] }],
    ] as const) {
      const res = await s.post(path, { ...greedy, ...body, max_tokens: 4, stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
      const chunks = (await sseEvents(res)).filter((c) => c !== '[DONE]') as { choices: unknown[]; usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } }[];
      const withChoices = chunks.filter((c) => c.choices.length > 0);
      assert.ok(withChoices.length > 0 && withChoices.every((c) => c.usage !== undefined), path);
      const counts = withChoices.map((c) => c.usage!.completion_tokens);
      assert.deepEqual(counts, [...counts].sort((a, b) => a - b), 'never falls');
      assert.equal(counts.at(-1), 4);
      assert.equal(chunks.at(-1)!.usage!.completion_tokens, 4);
      assert.ok(withChoices.every((c) => c.usage!.total_tokens === c.usage!.prompt_tokens + c.usage!.completion_tokens));
      // without continuous_usage_stats only the last chunk has usage
      const plain = (await sseEvents(await s.post(path, { ...greedy, ...body, max_tokens: 2, stream: true, stream_options: { include_usage: true } }))).filter((c) => c !== '[DONE]') as { usage?: unknown }[];
      assert.equal(plain.filter((c) => c.usage != null).length, 1);
    }
  });

  it('/tokenize return_token_strs gives the vocabulary pieces (null when not asked for)', async () => {
    const asked = (await (await s.post('/tokenize', { model: MODEL, prompt: 'Hello world', return_token_strs: true })).json()) as { tokens: number[]; token_strs: string[] };
    assert.deepEqual(asked.token_strs, asked.tokens.map((id) => s.model.tokenizer.tokenText(id)));
    assert.ok(asked.token_strs.length > 0 && asked.token_strs.every((t) => typeof t === 'string' && t.length > 0));
    const plain = (await (await s.post('/tokenize', { model: MODEL, prompt: 'Hello world' })).json()) as { token_strs: unknown };
    assert.equal(plain.token_strs, null);
  });

  it("/v1/models cards carry vLLM's root, parent and permission; GET /v1/models/{id} retrieves one", async () => {
    const list = (await (await fetch(`${s.url}/v1/models`)).json()) as { data: Record<string, unknown>[] };
    const card = list.data[0]!;
    assert.ok('root' in card && typeof card.root === 'string');
    assert.equal(card.parent, null);
    const perm = (card.permission as Record<string, unknown>[])[0]!;
    assert.equal(perm.object, 'model_permission');
    assert.equal(perm.allow_sampling, true);
    const one = await fetch(`${s.url}/v1/models/${encodeURIComponent(MODEL)}`);
    assert.equal(one.status, 200);
    assert.deepEqual(await one.json(), card);
    const none = await fetch(`${s.url}/v1/models/nope`);
    assert.equal(none.status, 404);
    assert.equal(((await none.json()) as { error: { type: string } }).error.type, 'NotFoundError');
  });

  it('chat: continue_final_message continues the assistant message, echo repeats it', async () => {
    const messages = [
      { role: 'user', content: 'Tell me.' },
      { role: 'assistant', content: 'Well, once' },
    ];
    const res = await s.post('/v1/chat/completions', { ...greedy, messages, max_tokens: 4, add_generation_prompt: false, continue_final_message: true, echo: true, return_token_ids: true });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { prompt_token_ids: number[]; choices: { message: { content: string } }[] };
    const promptText = s.model.tokenizer.decode(body.prompt_token_ids, { skipSpecial: false });
    assert.ok(promptText.endsWith('<|im_start|>assistant\nWell, once'), promptText);
    assert.ok(body.choices[0]!.message.content.startsWith('Well, once'));
    const both = await s.post('/v1/chat/completions', { ...greedy, messages, continue_final_message: true });
    assert.equal(both.status, 400);
    assert.equal(((await both.json()) as ErrorBody).error.param, 'continue_final_message');
  });
});

const STORIES = join(SHARED_MODELS, 'stories260K.gguf');

describe('OpenAI endpoints as vLLM: SentencePiece (stories260K)', { skip: !existsSync(STORIES) && `absent: ${STORIES}` }, () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(STORIES);
  });
  after(() => s.close());

  it('logprob tokens keep their leading space and join to the text', async () => {
    const res = await s.post('/v1/completions', { ...greedy, prompt: 'Once upon a time', max_tokens: 16, logprobs: 1 });
    const c = ((await res.json()) as Completion).choices[0]!;
    assert.equal(c.logprobs!.tokens.join(''), c.text);
    assert.ok(c.logprobs!.tokens.some((t) => t.startsWith(' ')), 'SentencePiece word starts keep their space');
  });

  it('add_special_tokens: false leaves BOS out of the prompt', async () => {
    const withBos = (await (await s.post('/v1/completions', { ...greedy, prompt: 'Once upon', max_tokens: 1, return_token_ids: true })).json()) as Completion;
    const without = (await (await s.post('/v1/completions', { ...greedy, prompt: 'Once upon', max_tokens: 1, return_token_ids: true, add_special_tokens: false })).json()) as Completion;
    assert.equal(withBos.choices[0]!.prompt_token_ids![0], s.model.tokenizer.bosId);
    assert.deepEqual(without.choices[0]!.prompt_token_ids, withBos.choices[0]!.prompt_token_ids!.slice(1));
  });
});
