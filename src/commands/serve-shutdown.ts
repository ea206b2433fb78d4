// Bounded shutdown of `loom serve`. On SIGTERM/SIGINT: stop accepting, end idle and half-sent
// connections at once, let in-flight requests finish until the timeout, then end what is
// left (streams get an error event, others a 503), destroy every remaining socket and exit 0
// within the timeout plus one second, whatever the clients do. A second signal exits at once.
import type { FastifyInstance } from 'fastify';
import type { EngineClient } from '../engine/client.js';
import type { Connections } from '../server/connections.js';

export interface ShutdownParts {
  readonly app: FastifyInstance;
  readonly engine: EngineClient;
  readonly connections: Connections;
  readonly timeoutMs: number;
  readonly inFlight: () => number;
  readonly log: (line: string) => void;
  /** at the first signal (e.g. /health turns 503 so balancers stop sending) */
  readonly onStop?: () => void;
  /** after the engine closed, before exit (e.g. the KV-event publisher) */
  readonly afterEngine?: () => Promise<void>;
}

/** time the error events and 503s of the cut requests get before the sockets go */
const FAREWELL_MS = 300;
/** the hard bound after the timeout, for anything that still hangs */
const BACKSTOP_MS = 900;

export function installShutdown(parts: ShutdownParts): void {
  let stopping = false;
  const onSignal = (signal: string): void => {
    if (stopping) {
      parts.log(`${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    void shutdown(parts, signal);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}

async function shutdown(parts: ShutdownParts, signal: string): Promise<void> {
  const { app, engine, connections, timeoutMs, log } = parts;
  parts.onStop?.();
  log(`${signal}: no new requests; ${parts.inFlight()} in flight get ${timeoutMs / 1000}s to finish`);
  setTimeout(() => {
    log('shutdown overran its timeout: exiting');
    process.exit(0);
  }, timeoutMs + BACKSTOP_MS).unref();
  const closed = app.close(); // stops listening; resolves once every connection has ended
  connections.drain();
  const inTime = await Promise.race([closed.then(() => true), sleep(timeoutMs).then(() => false)]);
  if (!inTime) {
    log(`${parts.inFlight()} requests still in flight after ${timeoutMs / 1000}s: ending them`);
    await engine.close();
    await Promise.race([closed, sleep(FAREWELL_MS)]);
    connections.destroyAll();
  }
  await engine.close();
  await parts.afterEngine?.().catch(() => undefined);
  process.exit(0);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());
