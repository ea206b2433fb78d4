// What each side of `loom bench peer` measures, in the same shape for loom and llama.cpp.
// All prompts are token ids (the same ids for both sides); every request decodes greedily
// and never stops at EOS.

/** Share of the measured window's wall time, by where it went (sums to 1). */
export type Profile = Readonly<Record<string, number>>;

export interface TimedTokens {
  /** tokens produced in the measured window (all sequences) */
  readonly tokens: number;
  /** the window's wall time */
  readonly ms: number;
  /** forward passes (loom steps / llama_decode calls) in the window */
  readonly calls: number;
  readonly profile?: Profile;
  /** MoE models: how many experts the measured steps ran (loom's side) */
  readonly experts?: ExpertUse;
}

/** Expert load over a measured window, per MoE layer and step. */
export interface ExpertUse {
  /** routed experts per layer */
  readonly experts: number;
  /** experts that ran (had at least one token) */
  readonly distinctPerLayerStep: number;
  /** (token, expert) pairs routed: tokens × experts used per token */
  readonly pairsPerLayerStep: number;
}

export interface PeerSide {
  readonly name: string;
  /** ms from submitting `prompt` (max 1 new token) to its first token */
  prefill(prompt: Int32Array): Promise<number>;
  /** one sequence: after `prompt` and `warmup` tokens, `tokens` more decode steps */
  decode(prompt: Int32Array, warmup: number, tokens: number): Promise<TimedTokens>;
  /** one sequence at a long context: `prompt` prefilled (timed, to its first token), then after
   *  `warmup` tokens, `tokens` decode steps at that context (timed); the prompt computed once */
  longContext(prompt: Int32Array, warmup: number, tokens: number): Promise<{ readonly prefill: TimedTokens; readonly decode: TimedTokens }>;
  /** every prompt decoding together: after all prefilled and `warmup` steps, `steps` steps of all of them */
  batched(prompts: readonly Int32Array[], warmup: number, steps: number): Promise<TimedTokens>;
  close(): Promise<void>;
}
