// Loads xgrammar's WebAssembly build (@mlc-ai/web-xgrammar, made for browsers) in Node and
// exposes its raw embind classes, synchronously, once loaded.
//
// Why not the package's own classes: they are an ES module that reads `require` and
// `__filename` (a bundler's CommonJS leftovers) and fails to import under Node; and every
// method that needs the binding is async only to await its lazy start, while the engine
// computes masks inside a synchronous step. So: the package file is compiled as the
// CommonJS function it really is (with `await import('module')` made a require), a one-line
// hook hands out the started binding, and loom calls the binding's classes directly.
// xgrammar reports a C++ error by printing "[FATAL] file:line: message" and aborting the
// call (the instance stays usable): printErr is captured so the message becomes the error.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import vm from 'node:vm';

/** an embind object that owns C++ memory */
export interface Deletable {
  delete(): void;
}

export interface VectorInt extends Deletable {
  size(): number;
}

export type TokenizerInfoHandle = Deletable & { GetVocabSize(): number };
export type GrammarHandle = Deletable & { ToString(): string };
export type CompiledGrammarHandle = Deletable;

export interface GrammarCompilerHandle extends Deletable {
  CompileJSONSchema(schema: string, anyWhitespace: boolean, indent: number | undefined, separators: { first: string; second: string } | undefined, strictMode: boolean, maxWhitespaceCnt: number | undefined): CompiledGrammarHandle;
  CompileBuiltinJSONGrammar(): CompiledGrammarHandle;
  CompileGrammar(grammar: GrammarHandle): CompiledGrammarHandle;
  CompileStructuralTag(json: string): CompiledGrammarHandle;
}

export interface GrammarMatcherHandle extends Deletable {
  AcceptToken(id: number, verbose: boolean): boolean;
  /** [ceil(vocabSize / 32)] bit i%32 of word i/32 set = token i allowed */
  GetNextTokenBitmask(vocabSize: number): VectorInt;
  IsTerminated(): boolean;
  Reset(): void;
  Rollback(numTokens: number): void;
}

export interface XGrammarBinding {
  vecStringFromJSArray(items: readonly (string | Uint8Array)[]): Deletable;
  vecIntFromJSArray(items: readonly number[]): Deletable;
  /** a view into wasm memory, valid until the vector is deleted */
  vecIntToView(v: VectorInt): Int32Array;
  TokenizerInfo: new (vocab: Deletable, vocabType: 'RAW' | 'BYTE_FALLBACK' | 'BYTE_LEVEL', vocabSize: number, stopIds: Deletable | undefined, prependSpace: boolean) => TokenizerInfoHandle;
  GrammarCompiler: new (info: TokenizerInfoHandle, maxThreads: number, cacheEnabled: boolean) => GrammarCompilerHandle;
  GrammarMatcher: new (compiled: CompiledGrammarHandle, overrideStopTokens: Deletable | undefined, terminateWithoutStopToken: boolean, maxRollbackTokens: number) => GrammarMatcherHandle;
  Grammar: {
    FromEBNF(ebnf: string, rootRule: string): GrammarHandle;
    FromJSONSchema(schema: string, anyWhitespace: boolean, indent: number | undefined, separators: undefined, strictMode: boolean, maxWhitespaceCnt: number | undefined, print: boolean): GrammarHandle;
    FromStructuralTag(json: string): GrammarHandle;
  };
}

/** Thrown when xgrammar refuses a grammar; the message is xgrammar's own. */
export class GrammarCompileError extends Error {
  override readonly name = 'GrammarCompileError';
}

const FATAL = /^\[FATAL\] \S+:\d+: (?:Check failed: \(.*?\) is false: )?/;
let lastFatal: string | undefined;
let loading: Promise<XGrammarBinding> | undefined;
let loaded: XGrammarBinding | undefined;

/** Starts xgrammar once per thread (~30 ms); later calls return the same binding. */
export function loadXGrammar(): Promise<XGrammarBinding> {
  loading ??= start().then((b) => (loaded = b));
  return loading;
}

/** The binding if loadXGrammar() has finished in this thread. */
export function xgrammarIfLoaded(): XGrammarBinding | undefined {
  return loaded;
}

/** Runs a binding call; an xgrammar abort becomes a GrammarCompileError with its message. */
export function callXGrammar<T>(what: string, fn: () => T): T {
  lastFatal = undefined;
  try {
    return fn();
  } catch (err) {
    const detail = lastFatal ?? (err instanceof Error ? err.message : String(err));
    throw new GrammarCompileError(`${what}: ${detail}`);
  }
}

async function start(): Promise<XGrammarBinding> {
  const require = createRequire(import.meta.url);
  const filename = require.resolve('@mlc-ai/web-xgrammar');
  const hook = 'var index = { Grammar,';
  let src = readFileSync(filename, 'utf8');
  if (!src.includes(hook) || !src.includes("await import('module')") || !src.includes('binding = await Module();')) {
    throw new Error(`@mlc-ai/web-xgrammar at ${filename} is not the build loom knows how to load (0.1.27)`);
  }
  src = src
    .replace("await import('module')", "require('module')")
    .replace('binding = await Module();', 'binding = await Module(moduleArg);')
    .replace(hook, `exports.loomBinding = async () => { await asyncInitBinding(); return binding; };\n${hook}`);
  const moduleArg = {
    printErr: (line: string) => {
      if (line.startsWith('[FATAL]')) lastFatal = line.replace(FATAL, '');
      else if (line !== 'Aborted()') process.stderr.write(`xgrammar: ${line}\n`);
    },
    print: (line: string) => process.stderr.write(`xgrammar: ${line}\n`),
  };
  const params = ['exports', 'require', 'module', '__filename', '__dirname', 'moduleArg'];
  const fn = vm.compileFunction(src, params, { filename }) as (...args: unknown[]) => void;
  const mod = { exports: {} as { loomBinding?: () => Promise<XGrammarBinding> } };
  fn(mod.exports, createRequire(filename), mod, filename, dirname(filename), moduleArg);
  return mod.exports.loomBinding!();
}
