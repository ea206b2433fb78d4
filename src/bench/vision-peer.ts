// `loom bench vision-peer`: one image a request, the way a user sends it (an OpenAI chat
// request with an `image_url` data URL, streamed), against loom serve and llama.cpp's
// llama-server on the same text model and projector, alternating requests. Each request
// carries a different image (seeded noise over gradients, PNG) so neither side's cache can
// answer it. Measured per request: time to the first streamed token (the image decoded,
// encoded and prefilled with the prompt) and loom's encoder time (its /metrics). This
// llama-server logs no encoder time (mtmd_batch_encode is silent); scripts/mtmd-embeddings.cpp
// prints libmtmd's for one image.
import sharp from 'sharp';
import { Rng } from '../engine/rng.js';
import { ensureLlamaServer, startLlamaServer } from './llama-server.js';
import { startLoomServer } from './loom-server.js';
import type { RunningServer } from './loom-server.js';
import { percentile } from './stats.js';
import { sseData } from './sse-data.js';

/** Median and extremes of a side's figures (few requests: the spread is the honest figure). */
export interface Range {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

function range(xs: readonly number[]): Range {
  return { median: percentile(xs, 50), min: Math.min(...xs), max: Math.max(...xs) };
}

export interface VisionPeerOptions {
  readonly model: string;
  readonly mmproj: string;
  /** the square images' side, pixels */
  readonly imageSize: number;
  /** requests per side */
  readonly requests: number;
  readonly threads: number;
  /** tokens generated per request (the first one is the measured one) */
  readonly maxTokens: number;
  readonly seed: number;
  /** a llama-server binary to run instead of the cached build */
  readonly llamaServer?: string;
  /** more llama-server flags (e.g. -fa off: its CPU flash attention is the slower path for an encoder) */
  readonly llamaArgs?: readonly string[];
}

export interface VisionRequest {
  readonly side: 'loom' | 'llama.cpp';
  readonly request: number;
  readonly ttftMs: number;
  readonly totalMs: number;
  readonly promptTokens: number;
  /** loom's encoder time (its /metrics) */
  readonly encodeMs?: number;
}

export interface VisionPeerReport {
  readonly settings: VisionPeerOptions;
  readonly requests: VisionRequest[];
  readonly loom: VisionSide;
  readonly llamacpp: VisionSide;
}

export interface VisionSide {
  readonly ttft: Range;
  readonly encode?: Range;
  readonly promptTokens: number;
}

/** A size×size PNG: gradients and seeded noise, so every seed is a different picture. */
export async function benchImage(size: number, seed: number): Promise<Buffer> {
  const rng = new Rng(seed);
  const px = Buffer.alloc(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = 3 * (y * size + x);
      px[i] = (x * 255) / size + 40 * rng.next();
      px[i + 1] = (y * 255) / size + 40 * rng.next();
      px[i + 2] = ((x + y) * 127) / size + 40 * rng.next();
    }
  }
  return sharp(px, { raw: { width: size, height: size, channels: 3 } }).png().toBuffer();
}

interface Streamed {
  readonly ttftMs: number;
  readonly totalMs: number;
  readonly promptTokens: number;
}

/** One streamed chat request with an image; time to the first content token, and the usage. */
function streamImageChat(url: string, png: Buffer, maxTokens: number): Promise<Streamed> {
  const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } };
  return streamChat(url, [image, { type: 'text', text: 'Describe this image.' }], maxTokens);
}

/** The name the server serves its model under (its first /v1/models entry). */
async function servedModel(url: string): Promise<string> {
  const list = (await (await fetch(`${url}/v1/models`)).json()) as { data?: { id: string }[] };
  return list.data?.[0]?.id ?? 'default';
}

async function streamChat(url: string, content: readonly object[], maxTokens: number): Promise<Streamed> {
  const body = {
    model: await servedModel(url),
    messages: [{ role: 'user', content }],
    max_tokens: maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  };
  const start = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP ${res.status}: ${await res.text()}`);
  let ttftMs = -1;
  let promptTokens = 0;
  for await (const data of sseData(res.body)) {
    if (data === '[DONE]') continue;
    const event = JSON.parse(data) as { choices?: { delta?: { content?: string | null; reasoning_content?: string | null } }[]; usage?: { prompt_tokens?: number } };
    const delta = event.choices?.[0]?.delta;
    if (ttftMs < 0 && (delta?.content || delta?.reasoning_content)) ttftMs = performance.now() - start;
    if (event.usage?.prompt_tokens) promptTokens = event.usage.prompt_tokens;
  }
  const totalMs = performance.now() - start;
  return { ttftMs: ttftMs < 0 ? totalMs : ttftMs, totalMs, promptTokens };
}

/** loom's encoder time so far (the sum of its loom:image_encode_seconds histogram), ms. */
async function loomEncodeMs(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^loom:image_encode_seconds_sum(?:\{[^}]*\})? ([0-9.e+-]+)$/m.exec(text);
  return m ? Number(m[1]) * 1000 : 0;
}

export async function runVisionPeer(o: VisionPeerOptions, log: (line: string) => void): Promise<VisionPeerReport> {
  const binary = o.llamaServer ?? (await ensureLlamaServer(log)).binary;
  const images = await Promise.all(Array.from({ length: o.requests }, (_, i) => benchImage(o.imageSize, o.seed * 1000 + i)));
  const servers: { side: VisionRequest['side']; server: RunningServer }[] = [];
  try {
    servers.push({ side: 'loom', server: await startLoomServer(o.model, ['--mmproj', o.mmproj, '--threads', String(o.threads), '--max-num-seqs', '1'], log) });
    servers.push({
      side: 'llama.cpp',
      server: await startLlamaServer(binary, o.model, { threads: o.threads, parallel: 1, slotContext: 8192, extraArgs: ['--mmproj', o.mmproj, '--cache-ram', '0', ...(o.llamaArgs ?? [])] }, log),
    });
    // a first, text-only request each, not measured: page in the text weights, start the thread
    // pools (an image here would cost a whole encoder run a side)
    for (const { server } of servers) await streamChat(server.url, [{ type: 'text', text: 'Hello.' }], 1);
    const requests: VisionRequest[] = [];
    for (let r = 0; r < o.requests; r++) {
      // alternate which side goes first, so a drifting machine load falls on both
      const order = r % 2 === 0 ? servers : [...servers].reverse();
      for (const { side, server } of order) {
        const loomBefore = side === 'loom' ? await loomEncodeMs(server.url) : 0;
        const s = await streamImageChat(server.url, images[r]!, o.maxTokens);
        const encodeMs = side === 'loom' ? (await loomEncodeMs(server.url)) - loomBefore : undefined;
        requests.push({ side, request: r, ...s, ...(encodeMs !== undefined && { encodeMs }) });
        log(`${side} request ${r}: TTFT ${s.ttftMs.toFixed(0)} ms, ${s.promptTokens} prompt tokens${encodeMs !== undefined ? `, encoder ${encodeMs} ms` : ''}`);
      }
    }
    const of = (side: VisionRequest['side']): VisionRequest[] => requests.filter((q) => q.side === side);
    const side = (name: VisionRequest['side']): VisionSide => {
      const encode = of(name).flatMap((q) => (q.encodeMs !== undefined ? [q.encodeMs] : []));
      return { ttft: range(of(name).map((q) => q.ttftMs)), ...(encode.length && { encode: range(encode) }), promptTokens: of(name)[0]?.promptTokens ?? 0 };
    };
    return { settings: o, requests, loom: side('loom'), llamacpp: side('llama.cpp') };
  } finally {
    for (const { server } of servers) await server.stop();
  }
}

export function formatVisionPeerReport(r: VisionPeerReport): string {
  const ms = (s: Range): string => `${s.median.toFixed(0)} ms (min ${s.min.toFixed(0)}, max ${s.max.toFixed(0)})`;
  const lines = [
    `${r.settings.imageSize}×${r.settings.imageSize} image, ${r.settings.requests} requests a side, ${r.settings.threads} threads`,
    `loom       TTFT ${ms(r.loom.ttft)}, ${r.loom.promptTokens} prompt tokens${r.loom.encode ? `; encoder ${ms(r.loom.encode)}` : ''}`,
    `llama.cpp  TTFT ${ms(r.llamacpp.ttft)}, ${r.llamacpp.promptTokens} prompt tokens${r.llamacpp.encode ? `; encoder ${ms(r.llamacpp.encode)}` : ''}`,
    `TTFT ratio (llama.cpp / loom, medians): ${(r.llamacpp.ttft.median / r.loom.ttft.median).toFixed(2)}x` +
      (r.loom.encode && r.llamacpp.encode ? `; encoder ratio ${(r.llamacpp.encode.median / r.loom.encode.median).toFixed(2)}x` : ''),
  ];
  return lines.join('\n');
}
