// Request fields that constrain the output, as each API spells them, to one GrammarSpec:
// OpenAI's response_format (json_object, json_schema), vLLM's structured_outputs {json,
// regex, choice, grammar, json_object} and its older guided_json / guided_regex /
// guided_choice / guided_grammar, LMDeploy's response_format (also regex_schema).
import type { GrammarSpec } from '../engine/grammar/spec.js';
import { HttpError } from './errors.js';

export interface ResponseFormat {
  type: string;
  json_schema?: { name?: string; description?: string; schema?: unknown; strict?: boolean | null } | null;
  /** LMDeploy */
  regex_schema?: string | null;
}

export interface StructuredOutputFields {
  response_format?: ResponseFormat | null;
  structured_outputs?: {
    json?: unknown;
    regex?: string | null;
    choice?: string[] | null;
    grammar?: string | null;
    json_object?: boolean | null;
    structural_tag?: unknown;
  } | null;
  guided_json?: unknown;
  guided_regex?: string | null;
  guided_choice?: string[] | null;
  guided_grammar?: string | null;
  /**
   * loom's (llguidance's lenient mode): a JSON schema's keywords no grammar can enforce
   * (uniqueItems, not, overlapping oneOf, if/then/else, dependencies) are dropped instead of
   * the request being refused with a 400 naming them
   */
  json_schema_lenient?: boolean | null;
}

/** The one grammar the body asks for and the field it came in, or null. */
export function grammarOfBody(body: StructuredOutputFields): { grammar: GrammarSpec; param: string } | null {
  const found: { grammar: GrammarSpec; param: string }[] = [];
  const rf = body.response_format;
  if (rf != null && rf.type !== 'text') found.push({ grammar: responseFormatGrammar(rf), param: 'response_format' });
  const so = body.structured_outputs;
  if (so != null) {
    if (so.structural_tag != null) throw new HttpError(400, 'structured_outputs.structural_tag is not supported', 'invalid_request_error', 'structured_outputs');
    const kinds: GrammarSpec[] = [];
    if (so.json != null) kinds.push({ type: 'json_schema', schema: so.json });
    if (so.regex != null) kinds.push({ type: 'regex', pattern: so.regex });
    if (so.choice != null) kinds.push({ type: 'choice', choices: so.choice });
    if (so.grammar != null) kinds.push({ type: 'grammar', grammar: so.grammar });
    if (so.json_object) kinds.push({ type: 'json_object' });
    if (kinds.length !== 1) {
      throw new HttpError(400, 'structured_outputs must set exactly one of json, regex, choice, grammar, json_object', 'invalid_request_error', 'structured_outputs');
    }
    found.push({ grammar: kinds[0]!, param: 'structured_outputs' });
  }
  if (body.guided_json != null) found.push({ grammar: { type: 'json_schema', schema: body.guided_json }, param: 'guided_json' });
  if (body.guided_regex != null) found.push({ grammar: { type: 'regex', pattern: body.guided_regex }, param: 'guided_regex' });
  if (body.guided_choice != null) found.push({ grammar: { type: 'choice', choices: body.guided_choice }, param: 'guided_choice' });
  if (body.guided_grammar != null) found.push({ grammar: { type: 'grammar', grammar: body.guided_grammar }, param: 'guided_grammar' });
  if (body.json_schema_lenient === true) {
    for (const f of found) if (f.grammar.type === 'json_schema') f.grammar = { ...f.grammar, lenient: true };
  }
  if (found.length > 1) {
    throw new HttpError(400, `only one kind of structured output may be requested, got ${found.map((f) => f.param).join(' and ')}`, 'invalid_request_error', found[1]!.param);
  }
  return found[0] ?? null;
}

function responseFormatGrammar(rf: ResponseFormat): GrammarSpec {
  switch (rf.type) {
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const js = rf.json_schema;
      if (js == null) throw new HttpError(400, 'response_format of type json_schema needs json_schema', 'invalid_request_error', 'response_format');
      // OpenAI makes the schema optional: then any JSON object
      return js.schema == null ? { type: 'json_object' } : { type: 'json_schema', schema: js.schema };
    }
    case 'regex_schema':
      if (typeof rf.regex_schema !== 'string') throw new HttpError(400, 'response_format of type regex_schema needs regex_schema', 'invalid_request_error', 'response_format');
      return { type: 'regex', pattern: rf.regex_schema };
    default:
      throw new HttpError(400, `response_format type ${JSON.stringify(rf.type)} is not supported (text, json_object, json_schema, regex_schema)`, 'invalid_request_error', 'response_format');
  }
}

/** JSON schemas (fastify's) of these body fields */
export const structuredOutputSchemas = {
  response_format: {
    type: ['object', 'null'],
    required: ['type'],
    properties: {
      type: { type: 'string' },
      json_schema: {
        type: ['object', 'null'],
        properties: { name: { type: 'string' }, description: { type: 'string' }, schema: {}, strict: { type: ['boolean', 'null'] } },
      },
      regex_schema: { type: ['string', 'null'] },
    },
  },
  structured_outputs: {
    type: ['object', 'null'],
    properties: {
      json: {},
      regex: { type: ['string', 'null'] },
      choice: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] },
      grammar: { type: ['string', 'null'] },
      json_object: { type: ['boolean', 'null'] },
      structural_tag: {},
    },
  },
  guided_json: {},
  guided_regex: { type: ['string', 'null'] },
  guided_choice: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] },
  guided_grammar: { type: ['string', 'null'] },
  json_schema_lenient: { type: ['boolean', 'null'] },
} as const;
