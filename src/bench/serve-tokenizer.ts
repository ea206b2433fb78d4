// The tokenizer `bench serve` builds prompts and counts tokens with: loom's own tokenizer of
// a local GGUF file or Hugging Face folder, or the server's /tokenize and /detokenize
// (loom and vLLM have both) when no local one is given.
import { statSync } from 'node:fs';
import { InvalidArgumentError, LoomError } from '../errors.js';
import { openGGUF } from '../model/gguf.js';
import { tokenizerFromGGUF } from '../tokenizer/gguf-tokenizer.js';
import { tokenizerFromHFFolder } from '../tokenizer/hf-tokenizer.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { BENCH_CORPUS } from './corpus.js';
import { vocabularyIds } from './datasets.js';

export interface BenchTokenizer {
  /** "PATH" or "server BASE_URL" */
  readonly source: string;
  encode(text: string, addSpecial: boolean): Promise<number[]>;
  decode(ids: readonly number[]): Promise<string>;
  /** ids random prompts are drawn from: real, non-special vocabulary tokens */
  promptVocabulary(): Promise<Int32Array>;
}

/** loom's tokenizer of a GGUF file or HF folder (the tensors are not read). */
export function localTokenizer(path: string): BenchTokenizer {
  let tok: Tokenizer;
  try {
    tok = statSync(path).isDirectory() ? tokenizerFromHFFolder(path) : tokenizerFromGGUF(path, openGGUF(path).metadata);
  } catch (e) {
    if (e instanceof LoomError) throw e;
    throw new InvalidArgumentError(`--tokenizer ${path}: ${(e as Error).message}`);
  }
  return {
    source: path,
    encode: async (text, addSpecial) => tok.encode(text, { addSpecial }),
    decode: async (ids) => tok.decode(ids, { skipSpecial: true }),
    promptVocabulary: async () => vocabularyIds(tok),
  };
}

/** isLocalPath("SmolLM2.gguf") → true when it names an existing file or folder */
export function isLocalPath(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The server's /tokenize and /detokenize; prompts draw from the tokens of a built-in text. */
export async function serverTokenizer(baseUrl: string, model: string, headers: Record<string, string>): Promise<BenchTokenizer> {
  const post = async (path: string, body: object): Promise<Record<string, unknown>> => {
    let res: Response;
    try {
      res = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ model, ...body }) });
    } catch (e) {
      throw new LoomError(`cannot reach ${baseUrl}${path}: ${(e as Error).cause ?? (e as Error).message}`);
    }
    if (!res.ok) {
      throw new InvalidArgumentError(
        `${baseUrl}${path} answered ${res.status}: give --tokenizer (a GGUF file or Hugging Face folder) for a server without /tokenize and /detokenize`,
      );
    }
    return (await res.json()) as Record<string, unknown>;
  };
  const encode = async (text: string, addSpecial: boolean): Promise<number[]> => {
    const r = await post('/tokenize', { prompt: text, add_special_tokens: addSpecial });
    if (!Array.isArray(r.tokens)) throw new LoomError(`${baseUrl}/tokenize: no "tokens" in the answer`);
    return r.tokens as number[];
  };
  const decode = async (ids: readonly number[]): Promise<string> => {
    const r = await post('/detokenize', { tokens: ids });
    if (typeof r.prompt !== 'string') throw new LoomError(`${baseUrl}/detokenize: no "prompt" in the answer`);
    return r.prompt;
  };
  const pool = Int32Array.from(new Set(await encode(BENCH_CORPUS, false)));
  await decode(Array.from(pool.subarray(0, 4))); // fails now, not mid-benchmark, without /detokenize
  return { source: `server ${baseUrl}`, encode, decode, promptVocabulary: async () => pool };
}
