#!/usr/bin/env node
// loom's command line. Each command lives in src/commands/; this file wires them up and
// turns loom's own errors into one line on stderr and exit code 1.
import { Command } from 'commander';
import { LoomError } from './errors.js';
import { benchCommand } from './commands/bench.js';
import { chatCommand } from './commands/chat.js';
import { embedCommand } from './commands/embed.js';
import { generateCommand } from './commands/generate.js';
import { listCommand, pullCommand, rmCommand } from './commands/models.js';
import { serveCommand } from './commands/serve.js';
import { versionText } from './commands/version.js';

const program = new Command()
  .name('loom')
  .description('LLM inference for Node.js: load GGUF or Hugging Face models, generate text, embed and rerank')
  .option('-V, --version', 'print the version, the kernels this machine runs and the thread count')
  .option('--debug', 'show stack traces on errors')
  .showHelpAfterError();
// asked for lazily: it loads the native core
program.on('option:version', () => {
  process.stdout.write(versionText() + '\n');
  process.exit(0);
});

program.addCommand(generateCommand());
program.addCommand(serveCommand());
program.addCommand(chatCommand());
program.addCommand(embedCommand());
program.addCommand(pullCommand());
program.addCommand(listCommand());
program.addCommand(rmCommand());
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
