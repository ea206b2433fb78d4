// Claude Code against loom's /v1/messages, an agent loop with no protocol error: loom's
// server (built, dist/) on a model file with a Qwen-style Hermes template, and a scripted
// "model": the engine really runs each request (prefix cache, scheduling, timing), but a
// grammar allowing exactly one text decides what it writes — a Bash tool call per turn
// (one for each command below, the next once a result is in the prompt), then an answer —
// since a random tiny model never decides to call a tool. Everything from the engine's
// sampling up (detokenizing, the Hermes parser, the Messages route, HTTP, SSE, Claude Code)
// is the real path. Each request's body goes to OUT/, and one line per request to stderr:
// prompt tokens, those from the prefix cache, time to the first token. With REASONING=1 the
// server runs --reasoning-parser qwen3 and every turn starts with thinking (thinking blocks).
//   node scripts/claude-code-loop.mjs PORT OUT [MODEL.gguf]
// MODEL.gguf must hold Claude Code's first prompt (~50k tokens with the fixtures' small
// vocabulary); without it, the long-context random fixture (test/fixtures/agents/long-context.ts).
// Then, in a folder with @anthropic-ai/claude-code installed:
//   HOME=DIR ANTHROPIC_BASE_URL=http://127.0.0.1:PORT ANTHROPIC_API_KEY=x ANTHROPIC_MODEL=fixture \
//     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 npx claude -p "List the files here" --model fixture --allowedTools Bash
import { mkdirSync, writeFileSync } from 'node:fs';
import { createEngineCore } from '../dist/src/engine/create.js';
import { InProcessEngineClient } from '../dist/src/engine/in-process-client.js';
import { loadModel } from '../dist/src/model/load.js';
import { buildApp } from '../dist/src/server/app.js';
import { longContextFixturePath } from '../dist/test/fixtures/agents/long-context.js';
import { HERMES_CHATML_TEMPLATE } from '../dist/test/fixtures/hermes-template.js';

const [port, out, modelPath] = process.argv.slice(2);
mkdirSync(out, { recursive: true });
const path = modelPath ?? longContextFixturePath();
const model = loadModel(path);
const engine = new InProcessEngineClient(createEngineCore({ model: path, backend: 'auto', kvCacheMemory: '512MiB', maxModelLen: Math.min(model.config.contextLength, 65536) }, model));
const tok = model.tokenizer;
const COMMANDS = (process.env.COMMANDS ?? 'ls|cat a.txt|pwd').split('|');
const CALLS = COMMANDS.map((command) => `<tool_call>\n{"name": "Bash", "arguments": {"command": ${JSON.stringify(command)}, "description": "Run ${command.replaceAll('"', '')}"}}\n</tool_call>`);
const TEXT = 'The files are listed above.';
const realAdd = engine.add.bind(engine);
let turn = 0;
engine.add = (id, promptIds, params) => {
  const prompt = tok.decode([...promptIds], { skipSpecial: false });
  const results = prompt.split('<tool_response>').length - 1;
  const think = process.env.REASONING ? `Turn ${results + 1}: I should ${results < CALLS.length ? 'run a command' : 'answer'}.</think>\n\n` : '';
  const text = think + (CALLS[results] ?? TEXT);
  const t0 = performance.now();
  const k = ++turn;
  const inner = realAdd(id, promptIds, { ...params, grammar: { type: 'choice', choices: [text] } });
  let first = true;
  const it = {
    [Symbol.asyncIterator]() {
      return it;
    },
    async next() {
      const r = await inner.next();
      if (!r.done && first && r.value.tokenIds.length > 0) {
        first = false;
        const cached = r.value.cachedPromptTokens ?? 0;
        console.error(`turn ${k}: ${promptIds.length} prompt tokens, ${cached} from the prefix cache (${((100 * cached) / promptIds.length).toFixed(1)}%), first token after ${(performance.now() - t0).toFixed(0)} ms; scripted ${JSON.stringify(text.slice(0, 60))}`);
      }
      return r;
    },
    return: (v) => inner.return(v),
  };
  return it;
};
const { app } = buildApp({ engine, tokenizer: tok, options: { servedModelName: 'fixture', maxModelLen: engine.info.maxModelLen, maxPendingRequests: 16, slowClientTimeoutMs: 600_000, bodyLimitBytes: 16 << 20, chatTemplate: HERMES_CHATML_TEMPLATE, ...(process.env.REASONING && { reasoningParser: 'qwen3' }), log: (l) => console.error(l) } });
let n = 0;
app.addHook('preHandler', async (req) => {
  writeFileSync(`${out}/request-${++n}.json`, JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: req.body ?? null }, null, 2));
});
app.addHook('onResponse', async (req, reply) => console.error(`${req.method} ${req.url} -> ${reply.statusCode} (${reply.elapsedTime.toFixed(0)} ms)`));
await app.listen({ host: '127.0.0.1', port: Number(port) });
console.error(`loom on ${port}, max model len ${engine.info.maxModelLen}`);
