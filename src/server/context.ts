// What every route needs: the engine, the tokenizer, limits and metrics.
import type { ModelDescription } from '../model/describe.js';
import type { EngineClient } from '../engine/client.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { HttpError } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import type { PipelineContext, PipelineOptions } from '../pipeline/context.js';
import type { RequestLimits } from '../pipeline/limits.js';
import type { NetworkOptions } from './network.js';
import type { TextWork } from './text-work.js';
import { IMAGE_DEFAULTS } from './image-fetch.js';
import type { ImageOptions } from './image-fetch.js';
import { ImageList } from './image-list.js';

export interface ServerOptions extends PipelineOptions {
  /** the name clients use in `model` */
  readonly servedModelName: string;
  /** the model as --model named it (vLLM's model card `root`; default: the served name) */
  readonly modelRoot?: string | undefined;
  readonly maxModelLen: number;
  readonly apiKey?: string | undefined;
  /** requests in flight beyond which new ones get 429 */
  readonly maxPendingRequests: number;
  /** a streaming client that does not read for this long is dropped */
  readonly slowClientTimeoutMs: number;
  readonly bodyLimitBytes: number;
  /** the chat page at / */
  readonly webui?: boolean;
  /** what the model is, for Ollama's /api/tags, /api/show, /api/ps */
  readonly description?: ModelDescription;
  /** TLS, read timeouts, header size (network.ts) */
  readonly network?: NetworkOptions | undefined;
  /** CORS origins ("*" for any); none by default */
  readonly allowedOrigins?: readonly string[] | undefined;
  /** one line per request on stderr, without its text */
  readonly logRequests?: boolean | undefined;
  /** n, stop strings, logit_bias entries per request (limits.ts) */
  readonly limits?: Partial<RequestLimits> | undefined;
  /** images: the byte bound a image, which hosts image URLs are fetched from, the fetch deadline */
  readonly images?: ImageOptions | undefined;
  /** where notices go (a request field loom ignores, once per name); default stderr */
  readonly log?: (line: string) => void;
}

/** A request the engine is running, as /abort_request and abort_all find it. */
export interface ActiveRequest {
  /** ends it as an `abort` finish (its response still completes) */
  abort(): void;
}

export interface ServerContext extends PipelineContext {
  readonly engine: EngineClient;
  readonly tokenizer: Tokenizer;
  /** encode / decode / chat rendering, off this thread when the text is long */
  readonly text: TextWork;
  readonly options: ServerOptions;
  readonly metrics: ServerMetrics;
  inFlight: number;
  /** set when shutdown begins: /ready turns 503 so load balancers stop sending new work */
  draining: boolean;
  /** requests in the engine, by engine request id */
  readonly requests: Map<string, ActiveRequest>;
  /** LMDeploy sessions running a /generate request: session_id → engine request id */
  readonly sessions: Map<number, string>;
  /** request fields already reported as ignored */
  readonly ignoredFields: Set<string>;
}

/** Reports fields of a request loom accepts but does not use, once per name (vLLM logs them). */
export function noteIgnoredFields(ctx: ServerContext, body: object, known: ReadonlySet<string>, where: string): void {
  for (const key of Object.keys(body)) {
    if (known.has(key) || ctx.ignoredFields.has(`${where}:${key}`)) continue;
    ctx.ignoredFields.add(`${where}:${key}`);
    (ctx.options.log ?? ((line: string) => console.error(line)))(`loom: ${where}: ignoring the request field "${key}" (reported once)`);
  }
}

export function checkModel(ctx: ServerContext, model: string | undefined): void {
  if (model !== undefined && model !== ctx.options.servedModelName) {
    throw new HttpError(404, `The model \`${model}\` does not exist.`, 'invalid_request_error', 'model', 'model_not_found');
  }
}


/** An empty list for a request's images, under the server's image options. */
export function imageList(ctx: ServerContext): ImageList {
  return new ImageList(ctx.options.images ?? IMAGE_DEFAULTS);
}
