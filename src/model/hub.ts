// Where a --model argument points: a local path as given, or `hf:ORG/REPO[:FILE]`
// fetched from the Hugging Face Hub into a local cache first.
import { InvalidArgumentError } from '../errors.js';

export interface HubOptions {
  /** never contact the Hub; use the cache only */
  readonly offline: boolean;
  /** default: $LOOM_CACHE or ~/.cache/loom */
  readonly cacheDir?: string | undefined;
}

export async function resolveModelPath(model: string, opts: HubOptions): Promise<string> {
  if (!model.startsWith('hf:')) return model;
  throw new InvalidArgumentError(`${model}: downloading from the Hub is not available yet (offline: ${opts.offline})`);
}
