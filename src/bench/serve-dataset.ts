// Requests of `bench serve`. random: token ids drawn uniformly (seeded) from real vocabulary
// tokens, lengths uniform in [ceil(I·R), I] and [ceil(O·R), O]; the ids become text, which is
// re-tokenized and trimmed or topped up until its own tokenization has the drawn length
// (as vLLM's random dataset does), so text endpoints see that many tokens. sharegpt: the
// first human turn and the reply to it from a local ShareGPT JSON file, shuffled (seeded)
// and filtered as vLLM's benchmark does.
import { readFileSync } from 'node:fs';
import { Rng } from '../engine/rng.js';
import { InvalidArgumentError } from '../errors.js';
import { randomRequests } from './datasets.js';
import type { BenchTokenizer } from './serve-tokenizer.js';

export interface ServeRequest {
  readonly prompt: string;
  /** the prompt's tokens (no special tokens added), sent as input_ids where the API takes them */
  readonly promptIds: readonly number[];
  readonly promptLen: number;
  /** max_tokens */
  readonly outputLen: number;
}

export interface RandomOptions {
  readonly numPrompts: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly rangeRatio: number;
  readonly seed: number;
}

const ADJUST_ROUNDS = 4;

export async function randomServeRequests(tok: BenchTokenizer, o: RandomOptions): Promise<ServeRequest[]> {
  const vocab = await tok.promptVocabulary();
  const drawn = randomRequests(vocab, { numRequests: o.numPrompts, inputLen: o.inputLen, outputLen: o.outputLen, rangeRatio: o.rangeRatio, seed: o.seed });
  const rng = new Rng(o.seed ^ 0x2545f491);
  return Promise.all(
    drawn.map(async (r) => {
      const target = r.promptIds.length;
      let text = await tok.decode(Array.from(r.promptIds));
      let ids = await tok.encode(text, false);
      for (let round = 0; round < ADJUST_ROUNDS && ids.length !== target; round++) {
        const next = ids.slice(0, target);
        while (next.length < target) next.push(vocab[Math.floor(rng.next() * vocab.length)]!);
        text = await tok.decode(next);
        ids = await tok.encode(text, false);
      }
      return { prompt: text, promptIds: ids, promptLen: ids.length, outputLen: r.outputLen };
    }),
  );
}

export interface ShareGPTOptions {
  readonly numPrompts: number;
  /** fixed output length instead of the reference answer's */
  readonly outputLen?: number;
  readonly seed: number;
}

/** vLLM's ShareGPT filter: prompt ≥ 4 and output ≥ 4 tokens, prompt ≤ 1024, prompt + output ≤ 2048. */
export function keepShareGPT(promptLen: number, outputLen: number, fixedOutput: boolean): boolean {
  if (promptLen < 4 || (!fixedOutput && outputLen < 4)) return false;
  return promptLen <= 1024 && promptLen + outputLen <= 2048;
}

export async function shareGPTRequests(tok: BenchTokenizer, path: string, o: ShareGPTOptions): Promise<ServeRequest[]> {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new InvalidArgumentError(`--dataset-path ${path}: ${(e as Error).message}`);
  }
  if (!Array.isArray(data)) throw new InvalidArgumentError(`--dataset-path ${path}: expected a JSON array of conversations (ShareGPT format)`);
  const pairs: [string, string][] = [];
  for (const item of data as unknown[]) {
    const turns = (item as { conversations?: unknown } | null)?.conversations;
    if (!Array.isArray(turns) || turns.length < 2) continue;
    const [q, a] = turns as { value?: unknown }[];
    if (typeof q?.value === 'string' && typeof a?.value === 'string') pairs.push([q.value, a.value]);
  }
  // seeded Fisher–Yates
  const rng = new Rng(o.seed);
  for (let i = pairs.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [pairs[i], pairs[j]] = [pairs[j]!, pairs[i]!];
  }
  const out: ServeRequest[] = [];
  for (const [prompt, answer] of pairs) {
    if (out.length >= o.numPrompts) break;
    const promptIds = await tok.encode(prompt, false);
    const outputLen = o.outputLen ?? (await tok.encode(answer, false)).length;
    if (!keepShareGPT(promptIds.length, outputLen, o.outputLen !== undefined)) continue;
    out.push({ prompt, promptIds, promptLen: promptIds.length, outputLen });
  }
  if (out.length === 0) throw new InvalidArgumentError(`--dataset-path ${path}: no conversation passes the filter`);
  return out; // fewer than numPrompts when the file has no more
}
