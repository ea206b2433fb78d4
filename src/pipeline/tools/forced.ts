// tool_choice "required" and a named function, enforced by a grammar as vLLM does
// (ChatCompletionRequest._get_json_schema_from_tool): a named function constrains the
// output to that function's `parameters` schema, so the whole output is its arguments;
// "required" constrains it to a JSON array (at least one item, at most one without
// parallel_tool_calls) of {"name": <one tool's name>, "parameters": <its schema>}.
// Each tool's schema is checked alone (loom's support check), so a refusal names the tool.
import { InvalidArgumentError } from '../../errors.js';
import { checkGrammarCompiles } from '../../engine/grammar/check.js';
import { validateGrammarSpec } from '../../engine/grammar/spec.js';
import type { GrammarSpec } from '../../engine/grammar/spec.js';
import type { ParsedToolCall } from './parsers.js';

/** How the output of a forced tool choice is read back. */
export type ForcedTools = { readonly kind: 'named'; readonly name: string } | { readonly kind: 'required' } | { readonly kind: 'generic' };

interface ToolSchemaSource {
  function: { name: string; parameters?: Record<string, unknown> | undefined };
}

/** a function without `parameters` takes none: its arguments are `{}` */
const NO_PARAMETERS = { type: 'object', properties: {} };

function parametersOf(tool: ToolSchemaSource): unknown {
  return tool.function.parameters ?? NO_PARAMETERS;
}

function refused(index: number, tool: ToolSchemaSource, why: string): InvalidArgumentError {
  return new InvalidArgumentError(`tools[${index}] (function "${tool.function.name}"): its parameters schema cannot be enforced: ${why}`, 'tools');
}

/** A tool's parameters schema, narrowed as loom compiles it; a 400 naming the tool when loom cannot enforce it. */
function checkedParameters(tool: ToolSchemaSource, index: number): unknown {
  try {
    return (validateGrammarSpec({ type: 'json_schema', schema: parametersOf(tool), closed: true }, 'tools') as { schema: unknown }).schema;
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw refused(index, tool, err.message);
    throw err;
  }
}

/** the tools a choice may call, with their indexes in the request */
function chosen(tools: readonly ToolSchemaSource[], choice: ForcedTools): [ToolSchemaSource, number][] {
  const all = tools.map((t, i): [ToolSchemaSource, number] => [t, i]);
  return choice.kind === 'named' ? all.filter(([t]) => t.function.name === choice.name) : all;
}

/** Local references ("#…") of a schema moved under `base`, where the schema now sits in a larger one. */
function rebaseRefs(node: unknown, base: string): unknown {
  if (Array.isArray(node)) return node.map((n) => rebaseRefs(n, base));
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string' && value.startsWith('#')) out[key] = base + value.slice(1);
    else out[key] = key === 'enum' || key === 'const' || key === 'default' || key === 'examples' ? value : rebaseRefs(value, base);
  }
  return out;
}

/** The grammar that forces the tool choice. */
export function forcedToolGrammar(tools: readonly ToolSchemaSource[], choice: ForcedTools, parallel: boolean): GrammarSpec {
  const params = chosen(tools, choice).map(([t, i]) => checkedParameters(t, i));
  // closed: a tool's arguments are its listed parameters unless its schema allows more (as vLLM compiles them)
  if (choice.kind === 'named') return { type: 'json_schema', schema: params[0], closed: true };
  // each tool's schema sits in $defs, its local references moved there: xgrammar resolves
  // a reference through objects only, not into the anyOf list
  const defs = Object.fromEntries(params.map((p, i) => [`tool${i}`, rebaseRefs(p, `#/$defs/tool${i}`)]));
  const items = tools.map((t, i) => ({
    type: 'object',
    properties: { name: { type: 'string', enum: [t.function.name] }, parameters: { $ref: `#/$defs/tool${i}` } },
    required: ['name', 'parameters'],
  }));
  const array = { type: 'array', minItems: 1, ...(parallel ? {} : { maxItems: 1 }), items: { anyOf: items } };
  if (choice.kind === 'generic') {
    // "auto" without a parser for the model's own format (llama-server's generic handler):
    // the calls as "required" writes them, or {"response": text} for a reply in words
    const reply = { type: 'object', properties: { response: { type: 'string' } }, required: ['response'], additionalProperties: false };
    return { type: 'json_schema', schema: { anyOf: [array, reply], $defs: defs }, closed: true };
  }
  return { type: 'json_schema', schema: { ...array, $defs: defs }, closed: true };
}

/**
 * xgrammar's own compile check, tool by tool, so a schema it rejects is a 400 naming the
 * tool; run only when the forced grammar as a whole failed to compile (the common case pays
 * for one compile check).
 */
export async function checkToolSchemasCompile(tools: readonly ToolSchemaSource[], choice: ForcedTools): Promise<void> {
  for (const [tool, i] of chosen(tools, choice)) {
    try {
      await checkGrammarCompiles({ type: 'json_schema', schema: checkedParameters(tool, i), closed: true });
    } catch (err) {
      if (err instanceof InvalidArgumentError) throw refused(i, tool, err.message);
      throw err;
    }
  }
}

/**
 * The calls in a "required" output: the JSON array the grammar forced. Null when it does
 * not parse (the output stopped at max_tokens).
 */
export function parseRequiredCalls(text: string): ParsedToolCall[] | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length === 0) return null;
  const calls: ParsedToolCall[] = [];
  for (const item of value) {
    if (typeof item !== 'object' || item === null) return null;
    const { name, parameters } = item as { name?: unknown; parameters?: unknown };
    if (typeof name !== 'string') return null;
    calls.push({ name, arguments: JSON.stringify(parameters ?? {}) });
  }
  return calls;
}
