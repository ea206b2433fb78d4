// What a request may constrain its output to: the structured-clonable form that travels in
// sampling params, validated once in the frontend.
import { InvalidArgumentError } from '../../errors.js';
import { compileJsonSchema, UnsupportedSchemaError } from './schema/compile.js';
import { xgrammarIfLoaded } from './xgrammar-binding.js';

export type GrammarSpec =
  /** any JSON object (OpenAI's json_object) */
  | { readonly type: 'json_object' }
  /** JSON valid against a JSON Schema (the schema as JSON text or a parsed object) */
  | {
      readonly type: 'json_schema';
      readonly schema: unknown;
      readonly lenient?: boolean;
      /** additionalProperties left out beside properties means none, properties in the schema's order (XGrammar's strict mode, llama.cpp: forced tool calls) */
      readonly closed?: boolean;
    }
  /** a regular expression matched against the whole output */
  | { readonly type: 'regex'; readonly pattern: string }
  /** exactly one of these strings */
  | { readonly type: 'choice'; readonly choices: readonly string[] }
  /** an EBNF grammar in xgrammar's (GBNF-like) notation, start rule `root` */
  | { readonly type: 'grammar'; readonly grammar: string };

/**
 * Checks a spec's shape and, for JSON schemas, that every keyword is one the grammar
 * enforces: InvalidArgumentError names the part (`what` is the request field).
 * Returns the spec with a JSON schema given as text parsed.
 */
export function validateGrammarSpec(spec: GrammarSpec, what = 'grammar'): GrammarSpec {
  const bad = (msg: string): never => {
    throw new InvalidArgumentError(msg, what);
  };
  switch (spec.type) {
    case 'json_object':
      return spec;
    case 'json_schema': {
      let schema = spec.schema;
      if (typeof schema === 'string') {
        try {
          schema = JSON.parse(schema) as unknown;
        } catch (err) {
          bad(`the schema is not valid JSON (${(err as Error).message})`);
        }
      }
      if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
        bad('the schema must be a JSON object');
      }
      if (schema === false) bad('the schema `false` accepts nothing');
      const out: GrammarSpec = { type: 'json_schema', schema, ...(spec.lenient === true && { lenient: true }), ...(spec.closed === true && { closed: true }) };
      // refusals (a keyword no grammar here enforces) are named now when xgrammar is up, else by checkGrammarCompiles
      const xg = xgrammarIfLoaded();
      if (xg) schemaToEbnf(out, what);
      return out;
    }
    case 'regex':
      if (typeof spec.pattern !== 'string' || spec.pattern.length === 0) bad('the regex must be a non-empty string');
      return spec;
    case 'choice':
      if (!Array.isArray(spec.choices) || spec.choices.length === 0) bad('choice must be a non-empty array of strings');
      for (const c of spec.choices) if (typeof c !== 'string' || c.length === 0) bad('every choice must be a non-empty string');
      return spec;
    case 'grammar':
      if (typeof spec.grammar !== 'string' || spec.grammar.trim().length === 0) bad('the grammar must be a non-empty string');
      return spec;
    default:
      return bad(`unknown grammar type ${JSON.stringify((spec as { type: unknown }).type)}`);
  }
}

/** One string per distinct grammar: the compile cache key (with the tokenizer fixed). */
export function grammarKey(spec: GrammarSpec): string {
  switch (spec.type) {
    case 'json_object':
      return 'json_object';
    case 'json_schema':
      return `json_schema${spec.lenient ? '~' : ''}${spec.closed ? '!' : ''}\0${JSON.stringify(spec.schema)}`;
    case 'regex':
      return `regex\0${spec.pattern}`;
    case 'choice':
      return `choice\0${JSON.stringify(spec.choices)}`;
    case 'grammar':
      return `grammar\0${spec.grammar}`;
  }
}

/** An EBNF literal for s: xgrammar strings take JSON's escapes. */
export function ebnfString(s: string): string {
  return JSON.stringify(s);
}

/** The EBNF of a choice: the root is exactly one of the strings. */
export function choiceGrammar(choices: readonly string[]): string {
  return `root ::= ${choices.map(ebnfString).join(' | ')}`;
}

/**
 * The EBNF loom compiles a JSON schema spec to, and what lenient mode dropped; a schema
 * using what loom does not enforce is an InvalidArgumentError naming the keyword and where.
 * Needs xgrammar started (loadXGrammar).
 */
export function schemaToEbnf(spec: Extract<GrammarSpec, { type: 'json_schema' }>, what = 'grammar'): { ebnf: string; warnings: readonly string[] } {
  const xg = xgrammarIfLoaded();
  if (!xg) throw new Error('xgrammar is not loaded');
  try {
    return compileJsonSchema(spec.schema, xg, { lenient: spec.lenient === true, closed: spec.closed === true });
  } catch (err) {
    if (err instanceof UnsupportedSchemaError) throw new InvalidArgumentError(err.message, what);
    throw err;
  }
}
