// `hf:ORG/REPO[@REVISION][:FILE]` and where its files live in the local cache:
//   <cache>/hub/<org>--<repo>/<revision>/<file>            the files, as the repo names them
//   <cache>/hub/<org>--<repo>/<revision>/<file>.part       a download in progress (resumable)
//   <cache>/hub/<org>--<repo>/.etags/<revision>/<file>     the ETag of <file> (`<file>.part`: of <file>.part)
//   <cache>/hub/<org>--<repo>/.resolved/<revision>.json    what `hf:ORG/REPO` (no FILE) resolved to
import { homedir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '../errors.js';

export interface HubRef {
  /** the argument as given, for messages */
  readonly spec: string;
  /** `org/repo` (or a bare legacy name like `gpt2`) */
  readonly repo: string;
  /** branch, tag or commit; default `main` */
  readonly revision: string;
  /** one file in the repo, or undefined for "the model in this repo" */
  readonly file: string | undefined;
}

const REPO_NAME = /^[\w.-]+(\/[\w.-]+)?$/;

export function isHubRef(model: string): boolean {
  return model.startsWith('hf:');
}

export function parseHubRef(model: string): HubRef {
  const body = model.slice('hf:'.length);
  const colon = body.indexOf(':');
  const repoAndRev = colon < 0 ? body : body.slice(0, colon);
  const file = colon < 0 ? undefined : body.slice(colon + 1);
  const at = repoAndRev.indexOf('@');
  const repo = at < 0 ? repoAndRev : repoAndRev.slice(0, at);
  const revision = at < 0 ? 'main' : repoAndRev.slice(at + 1);
  const usage = 'expected hf:ORG/REPO[@REVISION][:FILE]';
  if (!REPO_NAME.test(repo) || repo.split('/').some((s) => s === '.' || s === '..')) {
    throw new InvalidArgumentError(`${model}: "${repo}" is not a Hub repository name (${usage})`);
  }
  if (!revision || revision.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new InvalidArgumentError(`${model}: "${revision}" is not a revision (${usage})`);
  }
  if (file !== undefined) assertRepoPath(file, model);
  return { spec: model, repo, revision, file };
}

/** A path inside a repo that stays inside its cache folder: relative, no `..`, no empty parts. */
export function assertRepoPath(path: string, what: string): void {
  const parts = path.split('/');
  if (!path || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\'))) {
    throw new InvalidArgumentError(`${what}: "${path}" is not a file path inside the repository`);
  }
}

export function defaultCacheDir(): string {
  return process.env.LOOM_CACHE || join(homedir(), '.cache', 'loom');
}

export class HubCache {
  readonly repoDir: string;
  /** the folder holding this revision's files */
  readonly revisionDir: string;

  constructor(
    cacheDir: string,
    readonly ref: HubRef,
  ) {
    this.repoDir = join(cacheDir, 'hub', ref.repo.replace('/', '--'));
    this.revisionDir = join(this.repoDir, encodeURIComponent(ref.revision));
  }

  filePath(file: string): string {
    return join(this.revisionDir, ...file.split('/'));
  }

  partPath(file: string): string {
    return this.filePath(file) + '.part';
  }

  etagPath(file: string): string {
    return join(this.repoDir, '.etags', encodeURIComponent(this.ref.revision), ...file.split('/'));
  }

  resolvedPath(): string {
    return join(this.repoDir, '.resolved', `${encodeURIComponent(this.ref.revision)}.json`);
  }
}
