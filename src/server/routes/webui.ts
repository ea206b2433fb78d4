// The chat page at `/` (webui/index.html in the package: one file, no build step, nothing
// from elsewhere). The page itself is open; the API calls it makes carry the key.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PACKAGE_ROOT } from '../../package-info.js';

export const WEBUI_PATHS = ['/'];

export function webuiRoute(app: FastifyInstance): void {
  const page = readFileSync(join(PACKAGE_ROOT, 'webui', 'index.html'));
  app.get('/', async (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-cache')
      // the page runs only its own inline script and talks only to this server
      .header('content-security-policy', "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'")
      .send(page),
  );
}
