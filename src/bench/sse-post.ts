// The bench clients' POST (bench serve, agent-turns, chat-turns-peer, embed-peer): the request
// body as JSON, then the response; for the turn replays, each server-sent event's JSON as it
// arrives.
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { LoomError } from '../errors.js';
import { sseData } from './sse-data.js';

/**
 * POST body to url; the response once its headers are in. node:http, not fetch: fetch gives up
 * on headers after 300 s, and a server may send none until a long first prefill is done. A fresh
 * connection each time (agent: false): a kept-alive socket left idle through the other side's
 * ten-minute prefill has been closed by its server, and reusing it hangs up.
 */
export function postJson(url: string, body: object, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** Each event of a streamed POST, parsed (`[DONE]` left out); a status other than 200 throws with the body. */
export async function* postSse(url: string, body: object, headers: Record<string, string> = {}): AsyncGenerator<unknown> {
  const res = await postJson(url, body, headers);
  res.setEncoding('utf8');
  if (res.statusCode !== 200) {
    throw new LoomError(`${url}: HTTP ${res.statusCode}: ${await bodyText(res)}`);
  }
  for await (const data of sseData(res as AsyncIterable<string>)) if (data !== '[DONE]') yield JSON.parse(data) as unknown;
}

/** The whole body of a response as text. */
export async function bodyText(res: IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let text = '';
  for await (const chunk of res) text += chunk as string;
  return text;
}
