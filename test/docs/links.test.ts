// The documents' links: README.md and every docs/*.md. Each relative link must name a file
// or folder inside the repository, and each #anchor (in the same file or another local
// markdown file) must be the GitHub slug of a heading there; http(s) links are not fetched,
// only parsed. Links inside code (fenced blocks, `spans`) are not links. Also: the README
// stays a landing page that links every document, and nothing points outside the repository.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { chatCommand } from '../../src/commands/chat.js';
import { generateCommand } from '../../src/commands/generate.js';
import { listCommand, pullCommand, rmCommand } from '../../src/commands/models.js';
import { serveCommand } from '../../src/commands/serve.js';

/** the repository root: the nearest folder up from this file whose package.json is loom's
 *  (this file runs from dist/test/docs/, and may move) */
function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'loom-llm') return dir;
    if (dirname(dir) === dir) throw new Error(`no loom-llm package.json above ${from}`);
  }
}

const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

export interface Link {
  readonly target: string;
  /** 1-based line of the link in its file */
  readonly line: number;
}

/** The file's lines with fenced code blocks blanked (so line numbers stay right). */
function proseLines(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split('\n').map((line) => {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === null && m) {
      fence = m[1]!;
      return '';
    }
    if (fence !== null) {
      if (m && m[1]![0] === fence[0] && m[1]!.length >= fence.length && line.trim() === m[1]) fence = null;
      return '';
    }
    return line;
  });
}

/** Inline code spans removed (a backtick run closes only on a run of the same length). */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, (span) => ' '.repeat(span.length));
}

/** Every markdown link's target: inline `[text](target)` / `![alt](target)` (an optional
 *  "title" after it), `<https://…>` autolinks and `[label]: target` definitions. */
export function extractLinks(markdown: string): Link[] {
  const links: Link[] = [];
  proseLines(markdown).forEach((raw, i) => {
    const line = withoutCodeSpans(raw);
    for (const m of line.matchAll(/\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ target: m[1]!, line: i + 1 });
    }
    for (const m of line.matchAll(/<(https?:\/\/[^>\s]+)>/g)) links.push({ target: m[1]!, line: i + 1 });
    const def = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(line);
    if (def) links.push({ target: def[1]!, line: i + 1 });
  });
  return links;
}

/** GitHub's anchor for a heading's text: inline markup dropped (code keeps its text, a
 *  link its text), lower case, punctuation removed, spaces to hyphens (github-slugger). */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .replace(/(^|\s)_+|_+(\s|$)/g, '$1$2')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors a markdown file offers: its ATX headings' slugs, repeats suffixed -1, -2, …
 *  as GitHub does, plus explicit `<a name|id="…">` anchors. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(markdown)) {
    const h = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const a of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(a[1]!);
  }
  return out;
}

/** The documents checked: README.md and docs/*.md, as paths relative to the root. */
function documents(root: string): string[] {
  const docs = existsSync(join(root, 'docs'))
    ? readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => join('docs', f))
    : [];
  return ['README.md', ...docs];
}

/** Every broken link of the documents under root, one line each ("file:line: target: why"). */
export function brokenLinks(root: string, files: readonly string[]): string[] {
  const problems: string[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (abs: string): Set<string> => {
    let a = anchorCache.get(abs);
    if (!a) anchorCache.set(abs, (a = anchors(readFileSync(abs, 'utf8'))));
    return a;
  };
  for (const file of files) {
    const abs = join(root, file);
    for (const { target, line } of extractLinks(readFileSync(abs, 'utf8'))) {
      const where = `${file}:${line}: ${target}`;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
        let url: URL | null = null;
        try {
          url = new URL(target);
        } catch {
          /* reported below */
        }
        if (!url) problems.push(`${where}: not a well-formed URL`);
        else if (url.protocol === 'mailto:') continue;
        else if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`${where}: only http(s) and mailto links may leave the repository`);
        else if (!url.hostname.includes('.') && url.hostname !== 'localhost') problems.push(`${where}: no host`);
        continue;
      }
      if (target === '') {
        problems.push(`${where}: empty link`);
        continue;
      }
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
      if (pathPart.startsWith('/')) {
        problems.push(`${where}: absolute path (links must be relative to the file)`);
        continue;
      }
      const resolved = pathPart === '' ? abs : resolve(dirname(abs), pathPart);
      const rel = relative(root, resolved);
      if (rel.startsWith('..') || rel.split(sep).includes('node_modules')) {
        problems.push(`${where}: outside the repository`);
        continue;
      }
      if (!existsSync(resolved)) {
        problems.push(`${where}: no such file or folder (${rel})`);
        continue;
      }
      if (anchor === null) continue;
      if (statSync(resolved).isDirectory() || !resolved.endsWith('.md')) {
        problems.push(`${where}: an #anchor into ${rel}, which is not a markdown file`);
      } else if (!anchorsOf(resolved).has(anchor)) {
        problems.push(`${where}: no heading in ${rel} has the anchor #${anchor}`);
      }
    }
  }
  return problems;
}

describe('the documents', () => {
  const files = documents(ROOT);

  it('are README.md and the documents under docs/', () => {
    for (const name of ['cli', 'api', 'models', 'deployment', 'library', 'benchmarks', 'architecture']) {
      assert.ok(files.includes(join('docs', `${name}.md`)), `docs/${name}.md is missing`);
    }
  });

  it('have no broken links: files exist, anchors match headings, URLs parse', () => {
    const count = files.reduce((n, f) => n + extractLinks(readFileSync(join(ROOT, f), 'utf8')).length, 0);
    assert.ok(count > 100, `only ${count} links found: is the link finder broken?`);
    assert.deepEqual(brokenLinks(ROOT, files), []);
  });

  it('README.md is a landing page that links every document', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const lines = readme.split('\n').length;
    assert.ok(lines <= 250, `README.md has ${lines} lines; measurements and details belong in docs/`);
    const targets = new Set(extractLinks(readme).map((l) => l.target.split('#')[0]));
    for (const f of files.filter((f) => f !== 'README.md')) {
      assert.ok(targets.has(f.split(sep).join('/')), `README.md does not link ${f}`);
    }
  });

  it('docs/cli.md names every option of every command, as the commands define them', () => {
    const cli = readFileSync(join(ROOT, 'docs', 'cli.md'), 'utf8');
    const commands: Array<[string, Command]> = [
      ['generate', generateCommand()],
      ['serve', serveCommand()],
      ['chat', chatCommand()],
      ['pull', pullCommand()],
      ['list', listCommand()],
      ['rm', rmCommand()],
    ];
    const missing = commands.flatMap(([name, cmd]) =>
      cmd.options.filter((o) => o.long && !new RegExp(`(?<![\\w-])${o.long}(?![\\w-])`).test(cli)).map((o) => `loom ${name} ${o.long}`),
    );
    assert.deepEqual(missing, [], 'options docs/cli.md does not mention');
  });

  it('every measured table in docs/benchmarks.md sits under a heading dated with its commit', () => {
    const text = readFileSync(join(ROOT, 'docs', 'benchmarks.md'), 'utf8');
    let dated = false;
    let section = '(top)';
    const undated: string[] = [];
    proseLines(text).forEach((line, i) => {
      if (/^#{2,6}\s/.test(line)) {
        section = line;
        dated = false;
      } else if (/`[0-9a-f]{7,40}` \(\d{4}-\d\d-\d\d\)/.test(line)) {
        dated = true;
      } else if (/^\|\s*-/.test(line) && !dated && section !== '## The benchmark commands') {
        undated.push(`line ${i + 1} under ${section}`);
      }
    });
    assert.deepEqual(undated, [], 'tables without a commit and date before them in their section');
  });
});

describe('the link checker itself', () => {
  it('finds inline, image, autolink and reference links, and none inside code', () => {
    const md = [
      'See [a](docs/a.md#x) and ![i](img.png "title") and <https://example.com/p>.',
      '`[not](a-link.md)` and [b](b.md)',
      '```sh',
      '[c](inside-a-fence.md)',
      '```',
      '[ref]: ./ref.md',
    ].join('\n');
    assert.deepEqual(
      extractLinks(md).map((l) => `${l.line} ${l.target}`),
      ['1 docs/a.md#x', '1 img.png', '1 https://example.com/p', '2 b.md', '6 ./ref.md'],
    );
  });

  it('slugs headings as GitHub does', () => {
    assert.equal(slug('The model cache: `loom pull`, `loom list`, `loom rm`'), 'the-model-cache-loom-pull-loom-list-loom-rm');
    assert.equal(slug("Ollama's API"), 'ollamas-api');
    assert.equal(slug('loom against llama.cpp (`bench peer`)'), 'loom-against-llamacpp-bench-peer');
    assert.equal(slug('Q4_0 and Q8_0 in a load-time layout (AVX-512 VNNI)'), 'q4_0-and-q8_0-in-a-load-time-layout-avx-512-vnni');
    assert.equal(slug('`--step-time-factor` against the old scheduling'), '--step-time-factor-against-the-old-scheduling');
    assert.deepEqual([...anchors('# A\n## A\n```\n# not a heading\n```\n### A')], ['a', 'a-1', 'a-2']);
  });

  it('reports a missing file, a missing anchor, a path outside the repository and a bad URL', () => {
    const root = mkdtempSync(join(tmpdir(), 'loom-links-'));
    try {
      mkdirSync(join(root, 'docs'));
      writeFileSync(join(root, 'docs', 'a.md'), '# Title\n\n## Second part\n');
      writeFileSync(
        join(root, 'README.md'),
        [
          '# Readme',
          '[ok](docs/a.md#second-part) [ok](#readme) [ok](docs/) [ok](https://example.com/x)',
          '[gone](docs/b.md)',
          '[no anchor](docs/a.md#third-part)',
          '[outside](../shared/DESIGN.md)',
          '[bad url](https://example.com:99999/)',
          '[same file](#nowhere)',
        ].join('\n'),
      );
      assert.deepEqual(brokenLinks(root, ['README.md']), [
        'README.md:3: docs/b.md: no such file or folder (docs/b.md)',
        'README.md:4: docs/a.md#third-part: no heading in docs/a.md has the anchor #third-part',
        'README.md:5: ../shared/DESIGN.md: outside the repository',
        'README.md:6: https://example.com:99999/: not a well-formed URL',
        'README.md:7: #nowhere: no heading in README.md has the anchor #nowhere',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
