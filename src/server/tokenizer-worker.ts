// A tokenizer worker thread: loads the model's tokenizer only (GGUF header or tokenizer.json,
// no weights) and answers encode / decode / chat-render jobs one at a time, so the serving
// thread never spends seconds on a long text.
import { parentPort, workerData } from 'node:worker_threads';
import { InvalidArgumentError } from '../errors.js';
import { loadTokenizer } from '../model/load.js';
import { ChatTemplateError, renderChat } from '../tokenizer/chat-template.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { TokenizerInbound, TokenizerJob, TokenizerOutbound, TokenizerWorkerInit } from './tokenizer-protocol.js';

const port = parentPort!;
const post = (msg: TokenizerOutbound): void => port.postMessage(msg, msg.type === 'ids' ? [msg.ids.buffer as ArrayBuffer] : []);

function run(tokenizer: Tokenizer, init: TokenizerWorkerInit, id: number, job: TokenizerJob): TokenizerOutbound {
  switch (job.op) {
    case 'encode': {
      const ids = tokenizer.encode(job.text, { addSpecial: job.addSpecial, parseSpecial: job.parseSpecial });
      return job.json ? { type: 'json', id, json: JSON.stringify(ids), count: ids.length } : { type: 'ids', id, ids: Int32Array.from(ids) };
    }
    case 'decode':
      return { type: 'text', id, text: tokenizer.decode(Array.from(job.ids), { skipSpecial: job.skipSpecial }) };
    case 'render':
      return {
        type: 'text',
        id,
        text: renderChat(tokenizer, job.messages, { addGenerationPrompt: job.addGenerationPrompt, template: init.chatTemplate, ...(job.extra && { extra: job.extra }) }),
      };
  }
}

try {
  const init = workerData as TokenizerWorkerInit;
  const tokenizer = loadTokenizer(init.modelPath);
  port.on('message', ({ id, job }: TokenizerInbound) => {
    let out: TokenizerOutbound;
    try {
      out = run(tokenizer, init, id, job);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const kind = err instanceof ChatTemplateError ? 'chat-template' : err instanceof InvalidArgumentError ? 'invalid-argument' : 'other';
      out = { type: 'error', id, kind, message, param: err instanceof InvalidArgumentError ? err.param : null };
    }
    post(out);
  });
  post({ type: 'ready' });
} catch (err) {
  post({ type: 'fatal', message: err instanceof Error ? err.message : String(err) });
  port.close();
}
