// Codex CLI against loom, agent loops with no protocol error: loom's server (built, dist/)
// on a model file with a Qwen-style Hermes template, and a scripted "model": the engine
// really runs each request (prefix cache, scheduling, timing), but the token ids it returns
// are replaced by a script's — a tool call per turn (five), then text once five tool results are in
// the prompt — since a random tiny model never decides to call a tool. Everything above the
// engine (detokenizing, the Hermes parser, the Responses route, HTTP, SSE) is loom's real
// path. Every request and response body is written to OUT/ for fixtures.
// With REASONING=1 the server runs --reasoning-parser qwen3 and every scripted turn starts
// with thinking text, so Codex also gets (and sends back) reasoning items.
//   node scripts/codex-loop.mjs MODEL.gguf PORT OUT
// MODEL.gguf must hold Codex's ~7k-token first prompt: e.g. ../shared/models/llama-2-tiny-random.gguf
// with llama.context_length raised to 32768 (a u32 after the key; responses-agents.test.ts does it).
// Then, in a folder with @openai/codex installed and CODEX_HOME=DIR holding config.toml:
//   model = "fixture"
//   model_provider = "local"
//   [model_providers.local]
//   name = "local"
//   base_url = "http://127.0.0.1:PORT/v1"
//   wire_api = "responses"
//   env_key = "LOCAL_KEY"
//   CODEX_HOME=DIR LOCAL_KEY=x npx codex exec --skip-git-repo-check "Run echo hello from loom and tell me what it printed"
// Adding `model_auto_compact_token_limit = 7000` (top level) and, under the provider,
// `[model_providers.local.capabilities]` `remote_compaction = "v2"` makes Codex compact through
// the server (a compaction_trigger request, then its compaction item sent back); without the
// capability it compacts with an ordinary request. The scripted model's turn count restarts
// after each compaction, so with that low a limit the run compacts every turn until stopped.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createEngineCore } from '../dist/src/engine/create.js';
import { InProcessEngineClient } from '../dist/src/engine/in-process-client.js';
import { loadModel } from '../dist/src/model/load.js';
import { buildApp } from '../dist/src/server/app.js';
import { HERMES_CHATML_TEMPLATE } from '../dist/test/fixtures/hermes-template.js';

const [path, port, out] = process.argv.slice(2);
mkdirSync(out, { recursive: true });
const model = loadModel(path);
const engine = new InProcessEngineClient(createEngineCore({ model: path, backend: 'auto', kvCacheMemory: '64MiB' }, model));
const tok = model.tokenizer;
// one call per turn (the next once a result is in), then the answer
const CALLS = ['echo hello from loom', 'ls', 'pwd', 'cat package.json', 'wc -c package.json'].map((cmd) => `<tool_call>\n{"name": "exec_command", "arguments": {"cmd": ${JSON.stringify(cmd)}}}\n</tool_call>`);
const TEXT = 'The command printed: hello from loom.';
const realAdd = engine.add.bind(engine);
engine.add = (id, promptIds, params) => {
  const prompt = tok.decode([...promptIds], { skipSpecial: false });
  const results = prompt.split('<tool_response>').length - 1;
  const think = process.env.REASONING ? `Turn ${results}: I should ${results < CALLS.length ? 'run a command' : 'answer'}.</think>\n\n` : '';
  const script = tok.encode(think + (CALLS[results] ?? TEXT), { addSpecial: false, parseSpecial: false });
  const inner = realAdd(id, promptIds, { ...params, maxTokens: script.length, ignoreEos: true, minTokens: 0 });
  let at = 0;
  const it = {
    [Symbol.asyncIterator]() { return it; },
    async next() {
      const r = await inner.next();
      if (r.done) return r;
      const d = r.value;
      const ids = script.slice(at, at + d.tokenIds.length);
      at += ids.length;
      return { done: false, value: { ...d, tokenIds: Int32Array.from(ids), ...(d.finishReason && { finishReason: 'stop' }) } };
    },
    return: (v) => inner.return(v),
  };
  return it;
};
const { app } = buildApp({ engine, tokenizer: tok, options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 16, slowClientTimeoutMs: 30_000, bodyLimitBytes: 16 << 20, chatTemplate: HERMES_CHATML_TEMPLATE, ...(process.env.REASONING && { reasoningParser: 'qwen3' }), log: (l) => console.error(l) } });
let n = 0;
app.addHook('preHandler', async (req, reply) => {
  const k = ++n;
  writeFileSync(`${out}/request-${k}.json`, JSON.stringify({ method: req.method, url: req.url, body: req.body ?? null }, null, 2));
  const chunks = [];
  const write = reply.raw.write.bind(reply.raw);
  const end = reply.raw.end.bind(reply.raw);
  reply.raw.write = (c, ...a) => (chunks.push(String(c)), write(c, ...a));
  reply.raw.end = (c, ...a) => {
    if (c && typeof c !== 'function') chunks.push(String(c));
    writeFileSync(`${out}/response-${k}.txt`, `${reply.raw.statusCode}\n${chunks.join('')}`);
    return end(c, ...a);
  };
});
app.addHook('onSend', async (req, reply, payload) => {
  console.error(`${req.method} ${req.url} -> ${reply.statusCode}`);
  return payload;
});
await app.listen({ host: '127.0.0.1', port: Number(port) });
console.error(`loom on ${port}, max model len ${engine.info.maxModelLen}`);
