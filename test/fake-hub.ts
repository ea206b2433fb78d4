// A local stand-in for the Hugging Face Hub, just the endpoints loom and @huggingface/hub call:
//   GET  /api/models/{org}/{repo}/tree/{rev}        top-level listing (JSON)
//   GET|HEAD /{org}/{repo}/resolve/{rev}/{path}     file bytes; Range, ETag, X-Repo-Commit
// Errors the way the Hub sends them: 404 + X-Error-Code RepoNotFound / EntryNotFound /
// RevisionNotFound. It records every request, and can cut a transfer after N bytes.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly range: string | undefined;
  readonly authorization: string | undefined;
}

/** Cut the connection after `afterBytes` of a body transfer of `path` (not the 1-byte probes), `times` times. */
export interface Cut {
  path: string;
  afterBytes: number;
  times: number;
}

const COMMIT = 'c0ffee0000000000000000000000000000000000';

export class FakeHub {
  readonly repos = new Map<string, Map<string, Buffer>>();
  readonly requests: SeenRequest[] = [];
  cut: Cut | undefined;
  /** files whose ETag claims other content (a corrupting proxy, a changed upload) */
  readonly wrongEtag = new Set<string>();
  private server: Server | undefined;

  addRepo(name: string, files: Record<string, Buffer>): void {
    this.repos.set(name, new Map(Object.entries(files)));
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((ok) => this.server!.listen(0, '127.0.0.1', ok));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((ok) => this.server?.close(() => ok()) ?? ok());
  }

  /** requests for file bytes (not the 1-byte metadata probes) */
  transfers(): SeenRequest[] {
    return this.requests.filter((r) => r.url.includes('/resolve/') && r.method === 'GET' && r.range !== 'bytes=0-0');
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    this.requests.push({ method: req.method ?? 'GET', url, range: req.headers.range, authorization: req.headers.authorization });
    const path = url.split('?')[0]!;
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)$/.exec(path);
    if (tree) return this.tree(res, tree[1]!, decodeURIComponent(tree[2]!));
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (resolve) return this.resolve(req, res, resolve[1]!, decodeURIComponent(resolve[2]!), decodeURIComponent(resolve[3]!));
    this.error(res, 404, 'NotFound', 'Not found');
  }

  private error(res: ServerResponse, status: number, code: string, message: string): void {
    res.writeHead(status, { 'content-type': 'application/json', 'x-error-code': code });
    res.end(JSON.stringify({ error: message }));
  }

  private repo(res: ServerResponse, name: string, rev: string): Map<string, Buffer> | undefined {
    const repo = this.repos.get(name);
    if (!repo) return void this.error(res, 404, 'RepoNotFound', 'Repository not found');
    if (rev !== 'main' && rev !== COMMIT) return void this.error(res, 404, 'RevisionNotFound', `Invalid rev id: ${rev}`);
    return repo;
  }

  private tree(res: ServerResponse, name: string, rev: string): void {
    const repo = this.repo(res, name, rev);
    if (!repo) return;
    const items = [...repo].map(([path, data]) => ({ type: 'file', oid: sha(data).slice(0, 40), size: data.length, path }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(items));
  }

  private resolve(req: IncomingMessage, res: ServerResponse, name: string, rev: string, file: string): void {
    const repo = this.repo(res, name, rev);
    if (!repo) return;
    const data = repo.get(file);
    if (!data) return this.error(res, 404, 'EntryNotFound', `${file} does not exist`);
    const headers: Record<string, string | number> = {
      'content-type': 'application/octet-stream',
      'accept-ranges': 'bytes',
      etag: `"${sha(this.wrongEtag.has(file) ? Buffer.from('other') : data)}"`,
      'x-repo-commit': COMMIT,
    };
    let start = 0;
    let end = data.length - 1;
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range) {
      start = Number(range[1]);
      end = range[2] ? Math.min(Number(range[2]), end) : end;
      if (start > end) {
        res.writeHead(416, { 'content-range': `bytes */${data.length}` });
        return void res.end();
      }
      headers['content-range'] = `bytes ${start}-${end}/${data.length}`;
    }
    headers['content-length'] = end - start + 1;
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === 'HEAD') return void res.end();
    const body = data.subarray(start, end + 1);
    const cut = this.cut;
    if (cut && cut.path === file && cut.times > 0 && body.length > cut.afterBytes && req.headers.range !== 'bytes=0-0') {
      cut.times--;
      res.write(body.subarray(0, cut.afterBytes), () => setTimeout(() => res.socket?.destroy(), 20));
      return;
    }
    res.end(body);
  }
}

function sha(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
