#!/usr/bin/env node
// loom's command line. Each command lives in src/commands/; this file wires them up and
// turns loom's own errors into one line on stderr and exit code 1.
import { Command } from 'commander';
import { LoomError } from './errors.js';
import { benchCommand } from './commands/bench.js';
import { generateCommand } from './commands/generate.js';
import { serveCommand } from './commands/serve.js';

const program = new Command()
  .name('loom')
  .description('LLM inference for Node.js: load GGUF or Hugging Face models and generate text')
  .version('0.1.0')
  .option('--debug', 'show stack traces on errors')
  .showHelpAfterError();

program.addCommand(generateCommand());
program.addCommand(serveCommand());
program.addCommand(benchCommand());

const debug = process.argv.includes('--debug');
try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (debug || !(err instanceof LoomError)) {
    console.error(err);
  } else {
    console.error(`loom: ${err.message}`);
  }
  process.exitCode = 1;
}
