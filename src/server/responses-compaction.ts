// Compaction, as the Responses API defines it (POST /v1/responses/compact, and a final
// `compaction_trigger` input item — what Codex CLI sends with a provider whose
// `capabilities.remote_compaction = "v2"`): the model summarizes the conversation so far, asked
// by a compaction prompt appended after it as a user turn (so the whole history before it still
// comes from the prefix cache), and the summary comes back as one `compaction` item. OpenAI
// encrypts that item's content; loom has no secret to keep from its own client, so its
// `encrypted_content` is the summary under a marker, and a later request's `compaction` item
// renders as a user turn carrying it. A compaction item another server made is refused.
import type { ChatMessage } from '../tokenizer/chat-template.js';
import { HttpError } from './errors.js';

/** what the model is asked, after the conversation */
export const COMPACTION_PROMPT = [
  'Compact this conversation: write a summary that lets another assistant continue the task from here without it.',
  'Include what the user asked for, the progress so far and the decisions made, the facts, files, commands and results that matter,',
  'constraints and preferences, and what remains to be done next. Be concise and structured; write only the summary.',
].join(' ');

/** how a compaction item's summary is introduced when it is rendered back */
export const SUMMARY_LEAD = 'A summary of the conversation so far, written when it was compacted:\n\n';

/** a summary's length when the request sets no max_output_tokens */
export const DEFAULT_COMPACTION_TOKENS = 4096;

const MARK = 'loom.compaction.v1:';

export const compactionContent = (summary: string): string => MARK + Buffer.from(summary, 'utf8').toString('base64');

/** the summary a compaction item carries; a 400 naming the item when loom did not make it */
export function compactionSummary(content: unknown, where: string): string {
  if (typeof content !== 'string' || !content.startsWith(MARK)) {
    throw new HttpError(400, `${where}: a compaction item's encrypted_content must come from this server's compaction (another server's cannot be read)`, 'invalid_request_error', 'input');
  }
  return Buffer.from(content.slice(MARK.length), 'base64').toString('utf8');
}

/** a compaction item as the template sees it */
export const compactionMessage = (summary: string): ChatMessage => ({ role: 'user', content: SUMMARY_LEAD + summary });

/** the compaction prompt's turn */
export const compactionRequest = (): ChatMessage => ({ role: 'user', content: COMPACTION_PROMPT });
