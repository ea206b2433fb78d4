// --no-mmap and --mlock, as llama.cpp has them, for every command that loads a model.
import { Command } from 'commander';
import type { LoadOptions } from '../model/load.js';

export interface LoadFlags {
  /** false with --no-mmap */
  mmap?: boolean;
  mlock?: boolean;
}

export function addLoadFlags(cmd: Command): Command {
  return cmd
    .option('--no-mmap', 'read the weights into memory instead of mapping the model file (start-up then reads the whole file)')
    .option('--mlock', 'keep the weights in RAM: never paged out or dropped from the page cache (a warning when RLIMIT_MEMLOCK refuses)');
}

/** the flags as load (and engine) options; absent flags leave the defaults */
export function loadOptionsOf(flags: LoadFlags): LoadOptions {
  return { ...(flags.mmap === false && { mmap: false }), ...(flags.mlock === true && { mlock: true }) };
}
