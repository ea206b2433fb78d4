#!/usr/bin/env bash
# The package as a user gets it: `npm pack`, install the tarball into an empty folder (which
# builds the native core there), then run the default model and import the library.
# Run by .ci/run (too slow for the test suite: the native build alone takes a minute or more).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tarball=$(npm pack --silent --pack-destination "$work" | tail -1)
echo "check-package: packed $tarball ($(du -h "$work/$tarball" | cut -f1))"
mkdir "$work/app"
cd "$work/app"
npm init -y >/dev/null
npm install --no-audit --no-fund "../$tarball"
expected=', there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.
Lily'
got=$(npx loom generate --prompt "Once upon a time" --temperature 0 --max-tokens 60 2>"$work/stderr")
if [ "$got" != "$expected" ]; then
  echo "check-package: loom generate printed:"; echo "$got"; cat "$work/stderr"; exit 1
fi
grep -q 'built-in stories260K' "$work/stderr" || { echo "check-package: no line about the default model"; cat "$work/stderr"; exit 1; }
grep -q 'native core unavailable' "$work/stderr" && { echo "check-package: the native core did not build"; exit 1; }
npx loom --version
# the README's relative links (docs/*.md, models/) resolve in the installed package
pkg="$work/app/node_modules/loom-llm"
for target in $(grep -oE '\]\([^)# ]+' "$pkg/README.md" | cut -c3- | grep -v ':' | sort -u); do
  [ -e "$pkg/$target" ] || { echo "check-package: README.md links $target, which is not in the package"; exit 1; }
done
cat > library.mjs <<'JS'
import { LLM } from 'loom-llm';
const llm = await LLM.load(undefined, { kvCacheMemory: '16MiB' });
const r = await llm.generate('Once upon a time', { maxTokens: 8, temperature: 0 });
await llm.close();
if (!r.text.startsWith(', there was a little girl')) throw new Error('library: ' + r.text);
JS
node library.mjs
echo "check-package: ok (npx loom generate and import { LLM } from 'loom-llm' work from the installed tarball)"
