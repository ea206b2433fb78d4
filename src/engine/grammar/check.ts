// The frontend's compile check: a grammar that xgrammar cannot parse is refused before the
// request reaches the engine (a 400 naming the field, not an error mid-stream). Only the
// tokenizer-free half of compiling runs here (schema/regex/EBNF → grammar); the engine
// finishes the compile against the vocabulary, cached.
import { InvalidArgumentError } from '../../errors.js';
import { choiceGrammar, schemaToEbnf } from './spec.js';
import type { GrammarSpec } from './spec.js';
import { callXGrammar, GrammarCompileError, loadXGrammar } from './xgrammar-binding.js';
import type { GrammarHandle } from './xgrammar-binding.js';

/** Throws InvalidArgumentError (param `grammar`) with xgrammar's message when the grammar does not parse. */
export async function checkGrammarCompiles(spec: GrammarSpec): Promise<void> {
  if (spec.type === 'json_object') return;
  const xg = await loadXGrammar();
  // loom's own compiler first: a refused keyword is named as it is, not as an xgrammar failure
  const schemaEbnf = spec.type === 'json_schema' ? schemaToEbnf(spec).ebnf : undefined;
  let grammar: GrammarHandle | undefined;
  try {
    grammar = callXGrammar(`the ${spec.type === 'grammar' ? 'grammar' : spec.type.replace('_', ' ')} could not be compiled`, () => {
      switch (spec.type) {
        case 'json_schema':
          return xg.Grammar.FromEBNF(schemaEbnf!, 'root');
        case 'regex':
          return xg.Grammar.FromStructuralTag(JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: spec.pattern } }));
        case 'choice':
          return xg.Grammar.FromEBNF(choiceGrammar(spec.choices), 'root');
        case 'grammar':
          return xg.Grammar.FromEBNF(spec.grammar, 'root');
      }
    });
  } catch (err) {
    if (err instanceof GrammarCompileError) throw new InvalidArgumentError(err.message, 'grammar');
    throw err;
  } finally {
    grammar?.delete();
  }
}
