// Server-sent events on a raw response, with backpressure: a client that stops reading
// for longer than the timeout is dropped (and its request aborted) rather than buffered.
// The status line goes out with the first event, so a request that fails before it has
// anything to say still gets a plain HTTP error status.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

export class ClientGoneError extends Error {
  constructor() {
    super('the client went away');
    this.name = 'ClientGoneError';
  }
}

/** `sse`: `data: <json>` events (OpenAI); `ndjson`: one JSON object a line (Ollama) */
export type StreamFraming = 'sse' | 'ndjson';

export class SseWriter {
  private readonly res: ServerResponse;

  constructor(
    reply: FastifyReply,
    private readonly slowClientTimeoutMs: number,
    private readonly framing: StreamFraming = 'sse',
  ) {
    reply.hijack();
    this.res = reply.raw;
  }

  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  /** whether the 200 status line and any event have been sent */
  get started(): boolean {
    return this.res.headersSent;
  }

  /** Answers with a plain HTTP error instead of a stream (only before the first event). */
  fail(status: number, body: unknown): void {
    if (this.closed || this.started) return;
    this.res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    this.res.end(JSON.stringify(body));
  }

  /** `data: <json>\n\n` (or the literal [DONE]), after an `event: <name>` line when named; waits while the client's buffer is full. */
  async send(data: unknown, event?: string): Promise<void> {
    if (this.closed) throw new ClientGoneError();
    if (!this.started) {
      this.res.writeHead(200, {
        'content-type': this.framing === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
    }
    const named = event === undefined ? '' : `event: ${event}\n`;
    const line = this.framing === 'ndjson' ? `${JSON.stringify(data)}\n` : `${named}data: ${data === '[DONE]' ? '[DONE]' : JSON.stringify(data)}\n\n`;
    if (this.res.write(line)) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        this.res.destroy();
        reject(new ClientGoneError());
      }, this.slowClientTimeoutMs);
      const onDrain = (): void => {
        cleanup();
        resolve();
      };
      const onClose = (): void => {
        cleanup();
        reject(new ClientGoneError());
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        this.res.off('drain', onDrain);
        this.res.off('close', onClose);
      };
      this.res.on('drain', onDrain);
      this.res.on('close', onClose);
    });
  }

  end(): void {
    if (!this.closed) this.res.end();
  }
}

/** An AbortSignal that fires when the client closes the connection before the response is complete. */
export function disconnectSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const res = reply.raw;
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * Runs a streamed response: its events, then [DONE]. An error before the first event is a
 * plain HTTP error; after it, an error event (the status line is gone); a vanished client
 * ends it quietly.
 */
export async function runStream(sse: SseWriter, events: () => Promise<void>, toError: (err: unknown) => { status: number; body: unknown }): Promise<void> {
  try {
    await events();
    await sse.send('[DONE]');
  } catch (err) {
    if (err instanceof ClientGoneError || sse.closed) return;
    const { status, body } = toError(err);
    if (!sse.started) return sse.fail(status, body);
    try {
      await sse.send(body);
      await sse.send('[DONE]');
    } catch {
      // the client left meanwhile
    }
  } finally {
    sse.end();
  }
}
