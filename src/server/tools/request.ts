// A chat request's tools: checked, handed to the chat template (`tools`, as Hugging Face
// templates expect), and the parser that will read the model's calls. tool_choice "none"
// leaves the tools in the prompt but never parses calls (vLLM's default); "auto" parses
// them when loom knows the model's syntax (--tool-call-parser, or the template's own).
// "required" and a named function need a grammar to force the call, which this does not
// provide: they are refused with a 400 rather than silently left unenforced.
import type { ServerContext } from '../context.js';
import { HttpError } from '../errors.js';
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
  readonly parallel: boolean;
}

export function planTools(ctx: ServerContext, body: ToolFields): ChatToolsPlan {
  const tools = body.tools ?? [];
  const choice = body.tool_choice ?? (tools.length > 0 ? 'auto' : 'none');
  const names = new Set<string>();
  for (const t of tools) {
    if (names.has(t.function.name)) throw new HttpError(400, `tools: the function name "${t.function.name}" appears twice`, 'invalid_request_error', 'tools');
    names.add(t.function.name);
  }
  if (choice !== 'none' && tools.length === 0) {
    throw new HttpError(400, 'When using `tool_choice`, `tools` must be set.', 'invalid_request_error', 'tool_choice');
  }
  if (typeof choice === 'object') {
    if (!names.has(choice.function.name)) {
      throw new HttpError(400, `tool_choice names the function "${choice.function.name}", which is not in tools`, 'invalid_request_error', 'tool_choice');
    }
    throw new HttpError(400, 'tool_choice naming a function needs constrained decoding, which this server does not do yet; use "auto"', 'invalid_request_error', 'tool_choice');
  }
  if (choice === 'required') {
    throw new HttpError(400, 'tool_choice "required" needs constrained decoding, which this server does not do yet; use "auto"', 'invalid_request_error', 'tool_choice');
  }
  let parser: ToolCallParser | undefined;
  if (choice === 'auto') {
    const named = ctx.options.toolCallParser;
    parser = named !== undefined ? toolCallParser(named) : toolCallParserForTemplate(ctx.options.chatTemplate ?? ctx.tokenizer.chatTemplate);
    if (parser === undefined) {
      throw new HttpError(
        400,
        '"auto" tool choice needs a tool-call parser: this model\'s chat template shows none loom knows; start the server with --tool-call-parser',
        'invalid_request_error',
        'tool_choice',
      );
    }
  }
  return { templateVars: tools.length > 0 ? { tools } : {}, parser, parallel: body.parallel_tool_calls ?? true };
}
