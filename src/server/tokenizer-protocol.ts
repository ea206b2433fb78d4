// Messages between the serving thread and a tokenizer worker (tokenizer-worker.ts). Ids
// travel as Int32Array transferables; errors as a kind the main thread turns back into the
// domain error it was (so the one error handler maps it as if it had been thrown inline).
import type { ChatMessage } from '../tokenizer/chat-template.js';

/** what a new worker is given: the model path it loads the tokenizer from (never the weights) */
export interface TokenizerWorkerInit {
  readonly modelPath: string;
  /** --chat-template, used instead of the model's own */
  readonly chatTemplate?: string | undefined;
}

export type TokenizerJob =
  /** `json`: the ids come back as JSON text (a /tokenize answer), serialized here, not on the serving thread */
  | { readonly op: 'encode'; readonly text: string; readonly addSpecial: boolean; readonly parseSpecial: boolean; readonly json?: boolean }
  | { readonly op: 'decode'; readonly ids: Int32Array; readonly skipSpecial: boolean }
  | { readonly op: 'render'; readonly messages: readonly ChatMessage[]; readonly addGenerationPrompt: boolean; readonly extra?: Readonly<Record<string, unknown>> | undefined };

export type TokenizerInbound = { readonly id: number; readonly job: TokenizerJob };

export type WorkerErrorKind = 'chat-template' | 'invalid-argument' | 'other';

export type TokenizerOutbound =
  | { readonly type: 'ready' }
  | { readonly type: 'fatal'; readonly message: string }
  | { readonly type: 'ids'; readonly id: number; readonly ids: Int32Array }
  | { readonly type: 'text'; readonly id: number; readonly text: string }
  | { readonly type: 'json'; readonly id: number; readonly json: string; readonly count: number }
  | { readonly type: 'error'; readonly id: number; readonly kind: WorkerErrorKind; readonly message: string; readonly param: string | null };
