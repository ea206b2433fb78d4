// Builds an EngineCore from user options: opens the model (and a draft model), picks kernels, sizes the cache.
import { InvalidArgumentError } from '../errors.js';
import { selectKernels } from '../kernels/select.js';
import { loadModel } from '../model/load.js';
import type { LoadedModel, LoadOptions } from '../model/load.js';
import type { EngineInfo } from './client.js';
import { EngineCore } from './engine.js';
import { draftModelLines, recurrentStateLine, resolveEngineConfig } from './options.js';
import type { EngineOptions } from './options.js';
import { parseSpeculativeConfig } from './spec/config.js';
import { checkDraftVocabulary } from './spec/draft-vocab.js';
import type { PoolingInfo } from './protocol.js';
import { configForRunner } from '../model/pooling.js';
import { loadProjector } from '../model/vision/projector-file.js';
import type { VisionProjector } from '../model/vision/projector.js';

/** `loaded`: the model, already open (with its projector, when the caller opened that too) */
export function createEngineCore(opts: EngineOptions, loaded: LoadedModel & { readonly projector?: VisionProjector | undefined } = loadModel(opts.model, loadOptions(opts)), draftModel?: LoadedModel): EngineCore {
  const model = opts.runner && opts.runner !== 'auto' ? { ...loaded, config: configForRunner(loaded.config, opts.runner) } : loaded;
  const spec = opts.speculativeConfig !== undefined ? parseSpeculativeConfig(opts.speculativeConfig) : undefined;
  const draft = spec?.method === 'draft_model' ? (draftModel ?? loadDraft(spec.model, loadOptions(opts))) : undefined;
  if (draft) checkDraftVocabulary(model, draft);
  const config = resolveEngineConfig(opts, model.config, [...model.tokenizer.stopIds], draft?.config);
  const projector = loaded.projector ?? (opts.mmproj !== undefined ? loadProjector(opts.mmproj, model.config, loadOptions(opts)) : undefined);
  return new EngineCore({ ...model, projector }, selectKernels(opts.backend ?? 'auto', opts.threads), config, draft);
}

/** The start-up line naming the vision projector, when there is one. */
export function projectorLine(p: VisionProjector): string {
  return `vision projector ${p.source} (${p.kind}): images ${p.nonCausalImage ? 'attend both ways' : 'causal'}, ${p.positions} positions`;
}

/** how the engine's options say weights are held (--no-mmap, --mlock) */
export function loadOptions(opts: Pick<EngineOptions, 'mmap' | 'mlock'>): LoadOptions {
  return { ...(opts.mmap !== undefined && { mmap: opts.mmap }), ...(opts.mlock !== undefined && { mlock: opts.mlock }) };
}

/** the draft model, its load errors naming the option they came from */
function loadDraft(path: string, load: LoadOptions): LoadedModel {
  try {
    return loadModel(path, load);
  } catch (err) {
    throw new InvalidArgumentError(`--speculative-config: draft model ${err instanceof Error ? err.message : String(err)}`);
  }
}

function poolingInfo(engine: EngineCore): PoolingInfo {
  const p = engine.model.config.pooling!;
  return {
    type: p.type,
    size: engine.pooling!.pooler.outputSize,
    normalize: p.normalize,
    ...(p.matryoshkaDimensions && { matryoshkaDimensions: p.matryoshkaDimensions }),
    ...(p.rerankTemplate !== undefined && { rerankTemplate: p.rerankTemplate }),
  };
}

export function engineInfo(engine: EngineCore): EngineInfo {
  const c = engine.config;
  const stateLine = recurrentStateLine(engine.model.config, c.maxNumSeqs, engine.checkpoints?.numCheckpoints ?? 0);
  const notes = [
    ...(stateLine !== undefined ? [stateLine] : []),
    ...(engine.windowCheckpoints
      ? [`prefix caching pins up to ${engine.windowCheckpoints.numCheckpoints} windows in the sliding-window pool (${c.swaBlocks} blocks of ${c.blockSize} tokens)`]
      : []),
    ...(c.contextNote !== undefined ? [c.contextNote] : []),
    ...(engine.diskCache
      ? [`prefix blocks kept on disk in ${engine.diskCache.dir} (${(engine.diskCache.bytes / 2 ** 20).toFixed(1)} MiB of --kv-cache-dir-size ${(engine.diskCache.config.maxBytes / 2 ** 30).toFixed(2)} GiB used)`]
      : []),
    ...draftModelLines(c, engine.drafter?.model.config),
    ...(engine.images ? [projectorLine(engine.images.projector)] : []),
  ];
  return {
    numBlocks: engine.config.numBlocks,
    blockSize: engine.config.blockSize,
    maxModelLen: engine.config.maxModelLen,
    vocabSize: engine.model.config.vocabSize,
    logprobsMode: engine.config.logprobsMode,
    maxNumSeqs: engine.config.maxNumSeqs,
    prefixCaching: engine.config.enablePrefixCaching,
    kvCacheDtype: engine.config.kvDtype,
    kvCacheBytes: engine.runner.kv.bytes,
    ...(engine.diskCache && { kvCacheDir: { maxBytes: engine.diskCache.config.maxBytes, bytes: engine.diskCache.bytes } }),
    ...(notes.length > 0 && { notes }),
    ...(engine.pooling && { pooling: poolingInfo(engine) }),
  };
}
