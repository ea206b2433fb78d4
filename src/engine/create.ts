// Builds an EngineCore from user options: opens the model, picks kernels, sizes the cache.
import { selectKernels } from '../kernels/select.js';
import { loadModel } from '../model/load.js';
import type { LoadedModel } from '../model/load.js';
import type { EngineInfo } from './client.js';
import { EngineCore } from './engine.js';
import { resolveEngineConfig } from './options.js';
import type { EngineOptions } from './options.js';

export function createEngineCore(opts: EngineOptions, model: LoadedModel = loadModel(opts.model)): EngineCore {
  const config = resolveEngineConfig(opts, model.config, [...model.tokenizer.stopIds]);
  return new EngineCore(model, selectKernels(opts.backend ?? 'auto', opts.threads), config);
}

export function engineInfo(engine: EngineCore): EngineInfo {
  return {
    numBlocks: engine.config.numBlocks,
    blockSize: engine.config.blockSize,
    maxModelLen: engine.config.maxModelLen,
    vocabSize: engine.model.config.vocabSize,
    logprobsMode: engine.config.logprobsMode,
  };
}
