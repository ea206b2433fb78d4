// loom's /generate, /abort_request and /v1/encode against LMDeploy's contract. Sources
// (InternLM/lmdeploy):
// - lmdeploy/serve/openai/protocol.py: GenerateReqInput (fields, max_tokens 128, unknown
//   fields ignored by pydantic), GenerateReqOutput / GenerateReqMetaOutput, AbortRequest,
//   EncodeRequest / EncodeResponse, ErrorResponse {message, type, code, param, object}
// - lmdeploy/serve/openai/endpoints/generate.py check_request: the validation messages,
//   session occupancy; the stream's `data: {"error": …}` once started
// - lmdeploy/serve/openai/endpoints/management.py abort_request: by session or abort_all,
//   an unknown session is a 400
// - lmdeploy/serve/openai/endpoints/auxiliary.py encode: {input, add_bos} → {input_ids, length}
// - lmdeploy/messages.py GenerationConfig: stop_token_ids are not in the output; the
//   repetition_ngram early stop
// Differences loom keeps (docs/api.md, "Where loom differs from LMDeploy and vLLM"): stop words are matched as text (they may span tokens)
// rather than mapped to stop token ids; `seed` is loom's; /abort_request is on by default.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MODEL, fixtureBy, sseEvents, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';
import { waitUntil } from '../../fixtures/wait.js';

interface GenerateOut {
  text: string;
  output_ids: number[];
  meta_info: { prompt_tokens: number; completion_tokens: number; finish_reason: { type: string } | null; output_token_logprobs: [number, number][] | null };
}
interface LmdeployError {
  object: string;
  message: string;
  code: number;
  param: string | null;
}

describe('/generate as LMDeploy (qwen3 fixture)', () => {
  let s: TestServer;
  /** the most requests one engine step has carried tokens for since it was last reset */
  let generatingAtOnce = 0;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen3-q8_0'));
    s.engine.onStep((step) => (generatingAtOnce = Math.max(generatingAtOnce, step.deltas.length)));
  });
  /** until an engine step carries tokens of `n` requests: they run (and hold their sessions) */
  const generating = (n: number) => waitUntil(() => generatingAtOnce >= n, `${n} requests generating`);
  after(() => s.close());
  const gen = async (body: object): Promise<GenerateOut> => {
    const res = await s.post('/generate', { prompt: 'Once upon a time', temperature: 0, ...body });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as GenerateOut;
  };

  it("refuses what check_request refuses, with LMDeploy's messages and error shape", async () => {
    const cases: [object, string, RegExp][] = [
      [{ prompt: '' }, 'prompt', /The prompt must not be an empty string/],
      [{ prompt: null, input_ids: [] }, 'input_ids', /The input_ids must not be an empty list/],
      [{ input_ids: [1, 2] }, 'input_ids', /exactly one of prompt or input_ids/],
      [{ top_k: -1 }, 'top_k', /The top_k -1 cannot be a negative integer/],
      [{ top_p: 0 }, 'top_p', /The top_p 0 must be in \(0, 1\]/],
      [{ temperature: 3 }, 'temperature', /The temperature 3 must be in \[0, 2\]/],
      [{ max_tokens: 0 }, 'max_tokens', /The max_tokens 0 must be a positive integer/],
      [{ return_routed_experts: true }, 'return_routed_experts', /not supported/],
      [{ image_data: 'http://x/y.png' }, 'image_data', /not supported/],
      [{ stop_token_ids: [s.model.tokenizer.vocabSize] }, 'stop_token_ids', /outside|token ids/],
    ];
    for (const [body, param, message] of cases) {
      for (const stream of [false, true]) {
        const res = await s.post('/generate', { prompt: 'hi', stream, ...body });
        assert.equal(res.status, 400, JSON.stringify(body));
        const err = (await res.json()) as LmdeployError;
        assert.equal(err.object, 'error');
        assert.equal(err.code, 400);
        assert.equal(err.param, param, JSON.stringify(body));
        assert.match(err.message, message);
      }
    }
  });

  it("accepts LMDeploy's own fields and ignores unknown ones", async () => {
    const r = await gen({
      max_tokens: 4,
      ignore_eos: true,
      spaces_between_special_tokens: true,
      include_stop_str_in_output: false,
      return_routed_experts: false,
      repetition_ngram_size: 0,
      repetition_ngram_threshold: 0,
      media_io_kwargs: null,
      mm_processor_kwargs: null,
      session_id: -1,
      not_an_lmdeploy_field: 1,
    });
    assert.equal(r.output_ids.length, 4);
  });

  it('max_tokens defaults to 128', async () => {
    const r = await gen({ ignore_eos: true });
    assert.equal(r.output_ids.length, 128);
    assert.equal(r.meta_info.completion_tokens, 128);
    assert.equal(r.meta_info.finish_reason?.type, 'length');
  });

  it('a stop token id is neither in output_ids nor counted', async () => {
    const free = await gen({ max_tokens: 8, ignore_eos: true });
    const stopId = free.output_ids[3]!;
    const cut = free.output_ids.indexOf(stopId);
    const r = await gen({ max_tokens: 8, ignore_eos: true, stop_token_ids: [stopId] });
    assert.deepEqual(r.output_ids, free.output_ids.slice(0, cut));
    assert.equal(r.meta_info.completion_tokens, r.output_ids.length);
    assert.equal(r.meta_info.finish_reason?.type, 'stop');
    assert.equal(r.text, s.model.tokenizer.decode(r.output_ids));
  });

  it('streamed chunks add up to the whole answer; return_logprob pairs each id', async () => {
    const whole = await gen({ max_tokens: 10, ignore_eos: true, return_logprob: true });
    assert.deepEqual(whole.meta_info.output_token_logprobs!.map(([, id]) => id), whole.output_ids);
    const events = (await sseEvents(await s.post('/generate', { prompt: 'Once upon a time', temperature: 0, max_tokens: 10, ignore_eos: true, stream: true, return_logprob: true }))) as (GenerateOut | string)[];
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.filter((e): e is GenerateOut => typeof e !== 'string');
    assert.equal(chunks.map((c) => c.text).join(''), whole.text);
    assert.deepEqual(chunks.flatMap((c) => c.output_ids), whole.output_ids);
    assert.equal(chunks.at(-1)!.meta_info.completion_tokens, 10);
    assert.equal(chunks.at(-1)!.meta_info.finish_reason?.type, 'length');
  });

  it('repetition_ngram_size/threshold stop a completion once its last n-gram has been seen threshold times', async () => {
    // the fixture's greedy chain never repeats, so threshold 1 (every n-gram has been seen
    // once, by itself) shows the window: it stops as soon as `size` tokens exist
    const free = await gen({ max_tokens: 32, ignore_eos: true });
    for (const size of [1, 3]) {
      const r = await gen({ max_tokens: 32, ignore_eos: true, repetition_ngram_size: size, repetition_ngram_threshold: 1 });
      assert.deepEqual(r.output_ids, free.output_ids.slice(0, size));
      assert.equal(r.meta_info.finish_reason?.type, 'stop');
    }
    const never = await gen({ max_tokens: 32, ignore_eos: true, repetition_ngram_size: 1, repetition_ngram_threshold: 2 });
    assert.deepEqual(never.output_ids, free.output_ids, 'no token repeats, so threshold 2 never stops it');
  });

  it('session_id: occupied while running; /abort_request ends it as abort; unknown sessions are 400', async () => {
    generatingAtOnce = 0;
    const running = s.post('/generate', { prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true, session_id: 7 });
    await generating(1);
    const busy = await s.post('/generate', { prompt: 'hi', max_tokens: 1, session_id: 7 });
    assert.equal(busy.status, 400);
    assert.match(((await busy.json()) as LmdeployError).message, /The session_id 7 is occupied/);
    const abort = await s.post('/abort_request', { session_id: 7 });
    assert.equal(abort.status, 200);
    const out = (await (await running).json()) as GenerateOut;
    assert.equal(out.meta_info.finish_reason?.type, 'abort');
    assert.ok(out.output_ids.length < 400);
    const unknown = await s.post('/abort_request', { session_id: 12345 });
    assert.equal(unknown.status, 400);
    assert.match(((await unknown.json()) as LmdeployError).message, /Session 12345 not found/);
    // free again
    assert.equal((await s.post('/generate', { prompt: 'hi', max_tokens: 1, session_id: 7 })).status, 200);
  });

  it('abort_all ends every running request', async () => {
    generatingAtOnce = 0;
    const a = s.post('/generate', { prompt: 'Once', max_tokens: 400, ignore_eos: true });
    const b = s.post('/v1/completions', { model: 'fixture', prompt: 'Once', max_tokens: 400, ignore_eos: true });
    await generating(2);
    assert.equal((await s.post('/abort_request', { abort_all: true })).status, 200);
    assert.equal(((await (await a).json()) as GenerateOut).meta_info.finish_reason?.type, 'abort');
    assert.equal(((await (await b).json()) as { choices: { finish_reason: string }[] }).choices[0]!.finish_reason, 'abort');
  });

  it('/v1/encode gives input_ids and length, one prompt or many', async () => {
    const one = (await (await s.post('/v1/encode', { input: 'Once upon a time' })).json()) as { input_ids: number[]; length: number };
    assert.deepEqual(one.input_ids, s.model.tokenizer.encode('Once upon a time', { addSpecial: true }));
    assert.equal(one.length, one.input_ids.length);
    const many = (await (await s.post('/v1/encode', { input: ['a b', 'c'], add_bos: false })).json()) as { input_ids: number[][]; length: number[] };
    assert.deepEqual(many.input_ids, [s.model.tokenizer.encode('a b', { addSpecial: false }), s.model.tokenizer.encode('c', { addSpecial: false })]);
    assert.deepEqual(many.length, many.input_ids.map((ids) => ids.length));
  });
  it("a body LMDeploy's pydantic model refuses is FastAPI's 422: {detail: [{type, loc, msg, input}]}", async () => {
    const cases: [object, object][] = [
      [{ prompt: 'hi', max_tokens: 'many' }, { type: 'int_type', loc: ['body', 'max_tokens'], msg: 'Input should be a valid integer', input: 'many' }],
      [{ prompt: 'hi', temperature: 'hot' }, { type: 'float_type', loc: ['body', 'temperature'], msg: 'Input should be a valid number', input: 'hot' }],
      [{ prompt: 'hi', stream: 'yes' }, { type: 'bool_type', loc: ['body', 'stream'], msg: 'Input should be a valid boolean', input: 'yes' }],
    ];
    for (const [body, detail] of cases) {
      const res = await s.post('/generate', body);
      assert.equal(res.status, 422, JSON.stringify(body) + (await res.clone().text()));
      assert.deepEqual(await res.json(), { detail: [detail] });
    }
    const broken = await fetch(`${s.url}/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt": ' });
    assert.equal(broken.status, 422);
    assert.equal(((await broken.json()) as { detail: { type: string }[] }).detail[0]!.type, 'json_invalid');
    // what check_request refuses stays LMDeploy's 400 ErrorResponse (above)
    assert.equal((await s.post('/generate', { prompt: 'hi', top_k: -1 })).status, 400);
  });

  it("/get_ppl: the mean cross-entropy loss, the same number as vLLM's prompt_logprobs of the same ids", async () => {
    const text = 'Once upon a time there was a little fox';
    const ids = s.model.tokenizer.encode(text, { addSpecial: true });
    const byText = (await (await s.post('/get_ppl', { input: text })).json()) as { ppl: number };
    const byIds = (await (await s.post('/get_ppl', { input: ids })).json()) as { ppl: number };
    assert.ok(Number.isFinite(byText.ppl) && byText.ppl > 0);
    assert.equal(byIds.ppl, byText.ppl);
    const c = (await (await s.post('/v1/completions', { model: MODEL, prompt: ids, max_tokens: 1, prompt_logprobs: 0 })).json()) as {
      choices: { prompt_logprobs: (Record<string, { logprob: number }> | null)[] }[];
    };
    const lps = c.choices[0]!.prompt_logprobs.slice(1).map((entry, i) => entry![String(ids[i + 1])]!.logprob);
    assert.equal(lps.length, ids.length - 1);
    const mean = -lps.reduce((a, b) => a + b, 0) / lps.length;
    assert.ok(Math.abs(mean - byText.ppl) < 1e-6, `${mean} vs ${byText.ppl}`);
    const empty = await s.post('/get_ppl', { input: '' });
    assert.equal(empty.status, 400);
    assert.equal(((await empty.json()) as LmdeployError).message, 'Input must not be empty.');
    assert.equal((await s.post('/get_ppl', { text })).status, 422);
  });
});
