// How the HTTP server meets the network: TLS, timeouts for reading a request, the header
// size limit. Node checks its request timeouts only every connectionsCheckingInterval
// (30 s by default), so that interval follows the shortest timeout.
import type { ServerOptions as HttpServerOptions } from 'node:http';
import type { FastifyServerOptions } from 'fastify';

export interface NetworkOptions {
  /** PEM key and certificate: serve HTTPS */
  readonly tls?: { readonly key: Buffer | string; readonly cert: Buffer | string } | undefined;
  /** a client must send its whole request head within this */
  readonly headersTimeoutMs?: number | undefined;
  /** ... and its whole request, body included, within this */
  readonly requestTimeoutMs?: number | undefined;
  /** an idle keep-alive connection is closed after this */
  readonly keepAliveTimeoutMs?: number | undefined;
  /** request line and headers together */
  readonly maxHeaderBytes?: number | undefined;
}

export const NETWORK_DEFAULTS = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxHeaderBytes: 16 * 1024 } as const;

export function fastifyNetworkOptions(opts: NetworkOptions): Partial<FastifyServerOptions> & { https?: object; http?: object } {
  const requestTimeout = opts.requestTimeoutMs ?? NETWORK_DEFAULTS.requestTimeoutMs;
  const headersTimeout = Math.min(opts.headersTimeoutMs ?? NETWORK_DEFAULTS.headersTimeoutMs, requestTimeout);
  const server: HttpServerOptions = {
    headersTimeout,
    requestTimeout,
    maxHeaderSize: opts.maxHeaderBytes ?? NETWORK_DEFAULTS.maxHeaderBytes,
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, headersTimeout / 4)),
  };
  return {
    requestTimeout,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? NETWORK_DEFAULTS.keepAliveTimeoutMs,
    connectionTimeout: 0,
    ...(opts.tls ? { https: { ...server, key: opts.tls.key, cert: opts.tls.cert } } : { http: server }),
  };
}
