// A request's tools (the pipeline's input, in OpenAI's function shape; other APIs map theirs
// onto it): checked, handed to the chat template (`tools`, as Hugging Face templates
// expect), and the parser that will read the model's calls. tool_choice "none"
// leaves the tools in the prompt but never parses calls (vLLM's default); "auto" parses
// them when loom knows the model's syntax (--tool-call-parser, or the template's own), and
// otherwise forces a generic JSON format by a grammar (a list of calls or {"response"}),
// as llama-server's generic handler does.
// "required" and a named function are forced by a grammar (forced.ts) and need no parser.
import type { GrammarSpec } from '../../engine/grammar/spec.js';
import { InvalidArgumentError } from '../../errors.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import type { PipelineOptions } from '../context.js';
import { forcedToolGrammar } from './forced.js';
import type { ForcedTools } from './forced.js';
import { toolCallParser, toolCallParserForTemplate } from './parsers.js';
import type { ToolCallParser } from './parsers.js';

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export interface ToolFields {
  tools?: ChatTool[] | null;
  tool_choice?: ToolChoice | null;
  parallel_tool_calls?: boolean | null;
}

export interface ChatToolsPlan {
  /** template variables: `tools` when the request has any */
  readonly templateVars: Record<string, unknown>;
  /** the parser of the model's calls, when they are to be parsed */
  readonly parser: ToolCallParser | undefined;
  /** set when tool_choice forces a call: how to read the output back, and the grammar that forces it */
  readonly forced: { readonly tools: ForcedTools; readonly grammar: GrammarSpec } | undefined;
  readonly parallel: boolean;
}

export function planTools(ctx: { readonly options: PipelineOptions; readonly tokenizer: Tokenizer }, body: ToolFields): ChatToolsPlan {
  const tools = body.tools ?? [];
  const choice = body.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  const names = new Set<string>();
  for (const t of tools) {
    if (names.has(t.function.name)) throw new InvalidArgumentError(`tools: the function name "${t.function.name}" appears twice`, 'tools');
    names.add(t.function.name);
  }
  if (choice !== 'none' && tools.length === 0) {
    throw new InvalidArgumentError('When using `tool_choice`, `tools` must be set.', 'tool_choice');
  }
  if (typeof choice === 'object') {
    if (!names.has(choice.function.name)) {
      throw new InvalidArgumentError(`tool_choice names the function "${choice.function.name}", which is not in tools`, 'tool_choice');
    }
  }
  const parallel = body.parallel_tool_calls ?? true;
  if (typeof choice === 'object' || choice === 'required') {
    const forced: ForcedTools = typeof choice === 'object' ? { kind: 'named', name: choice.function.name } : { kind: 'required' };
    return { templateVars: { tools }, parser: undefined, forced: { tools: forced, grammar: forcedToolGrammar(tools, forced, parallel) }, parallel };
  }
  let parser: ToolCallParser | undefined;
  if (choice === 'auto') {
    const named = ctx.options.toolCallParser;
    parser = named !== undefined ? toolCallParser(named) : toolCallParserForTemplate(ctx.options.chatTemplate ?? ctx.tokenizer.chatTemplate);
    if (parser === undefined) {
      // no format known for this model: the generic one, enforced by a grammar (forced.ts)
      const forced: ForcedTools = { kind: 'generic' };
      return { templateVars: { tools }, parser: undefined, forced: { tools: forced, grammar: forcedToolGrammar(tools, forced, parallel) }, parallel };
    }
  }
  return { templateVars: tools.length > 0 ? { tools } : {}, parser, forced: undefined, parallel };
}

/**
 * The generic format told to the model, as llama-server's generic handler adds it: one line
 * (and the tools' names, which a template with no tool markup does not show) joined to the
 * system message, or a system message of its own before the others.
 */
export function withGenericToolsInstruction<M extends { role: string; content: string }>(messages: readonly M[], tools: readonly ChatTool[]): M[] {
  // names and descriptions only: the grammar holds each call to its tool's schema, and a
  // small context has no room for every schema twice
  const listed = tools.map((t) => (t.function.description ? `${t.function.name} (${t.function.description})` : t.function.name));
  const line =
    'Respond in JSON: either a list of tool calls, [{"name": <tool name>, "parameters": <its arguments>}], or {"response": <your reply to the user>}. ' +
    `The tools: ${listed.join('; ')}.`;
  const first = messages[0];
  if (first && first.role === 'system') return [{ ...first, content: `${first.content}\n\n${line}` }, ...messages.slice(1)];
  return [{ role: 'system', content: line } as M, ...messages];
}
