// The installed package: where it lives (its models/ folder, package.json) and its version.
// Compiled to dist/src/package-info.js, two folders below the package root.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
export const PACKAGE_NAME = pkg.name;
export const PACKAGE_VERSION = pkg.version;
