// The Hub's failures as one line each: what we were doing, which URL, what came back.
import { HubApiError, InvalidApiResponseFormatError } from '@huggingface/hub';
import { LoomError } from '../errors.js';

/** A Hub download or lookup failed (HTTP status, bad response, interrupted transfer). */
export class HubError extends LoomError {}

/** The Hub could not be reached at all (DNS, refused, reset before any answer). */
export class HubUnreachableError extends HubError {}

/** Offline, and the cache has no copy of what was asked for. */
export class HubNotCachedError extends HubError {
  constructor(spec: string, where: string) {
    super(`${spec} is not in the cache (${where}) and --offline (or HF_HUB_OFFLINE=1) forbids downloading`);
  }
}

/** Why a request got no answer, e.g. `ECONNREFUSED`, from fetch's `TypeError: fetch failed`. */
export function networkReason(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e instanceof Error; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (e.cause === undefined) return e.message;
    e = e.cause;
  }
  return String(e);
}

function statusHint(status: number): string {
  if (status === 401 || status === 403) return ' (no such repository, or it is private or gated: set HF_TOKEN)';
  if (status === 404) return ' (no such repository, revision or file)';
  if (status === 416) return ' (range not satisfiable)';
  if (status === 429) return ' (rate limited: try later, or set HF_TOKEN)';
  return '';
}

export function httpError(what: string, method: string, url: string, status: number, detail?: string): HubError {
  const said = detail ? `: ${detail}` : '';
  return new HubError(`${what}: HTTP ${status}${said} from ${method} ${url}${statusHint(status)}`);
}

/** Turns whatever the library or fetch threw into one HubError line; LoomErrors pass through. */
export function toHubError(what: string, err: unknown): LoomError {
  if (err instanceof HubUnreachableError) return new HubUnreachableError(`${what}: ${err.message}`, { cause: err.cause });
  if (err instanceof LoomError) return err;
  if (err instanceof HubApiError) {
    const data = err.data as { error?: unknown } | undefined;
    const detail = typeof data?.error === 'string' ? data.error : undefined;
    return httpError(what, 'GET', err.url, err.statusCode, detail);
  }
  if (err instanceof InvalidApiResponseFormatError) return new HubError(`${what}: unexpected answer from the Hub: ${err.message}`);
  return new HubError(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

/**
 * fetch for the library and for our own transfers: adds `Authorization: Bearer $HF_TOKEN`
 * (the library's own token option insists on an `hf_` prefix) and names the URL when the
 * request gets no answer at all.
 */
export function hubFetch(token: string | undefined): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    if (token && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
    const url = input instanceof Request ? input.url : String(input);
    try {
      return await fetch(input, { ...init, headers });
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw new HubUnreachableError(`cannot reach ${url}: ${networkReason(err)}`, { cause: err });
    }
  };
}
