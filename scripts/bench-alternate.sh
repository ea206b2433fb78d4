#!/bin/sh
# Alternating kernel benchmark of two builds of the native addon, for "same speed" claims:
#   scripts/bench-alternate.sh OLD.node NEW.node [ROUNDS] [-- bench kernels options]
# e.g.  scripts/bench-alternate.sh old-addon/loom_native.node build/Release/loom_native.node 5 -- --types Q4_K,Q8_0
# Runs `loom bench kernels --json` (dist/src/cli.js: run `npx tsc -p .` first) with
# LOOM_NATIVE_ADDON set to OLD, then NEW, ROUNDS times (default 3), so slow phases of a
# loaded machine fall on both; then prints, per type and shape (one row, a short row, many
# rows; attention decode as a control whose code neither build changes), the median over
# rounds of each build's median ms and new/old (< 1: the new build is faster), and the
# spread of the per-round ratios. The JSON of every run stays in $BENCH_OUT (default a
# temporary directory).
set -eu
[ $# -ge 2 ] || { sed -n 2,4p "$0"; exit 2; }
old=$(realpath "$1"); new=$(realpath "$2"); shift 2
rounds=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
out=${BENCH_OUT:-$(mktemp -d)}
i=1
while [ "$i" -le "$rounds" ]; do
  for which in old new; do
    addon=$old; [ "$which" = new ] && addon=$new
    LOOM_NATIVE_ADDON=$addon node "$root/dist/src/cli.js" bench kernels --json "$@" > "$out/$which-$i.json"
    echo "round $i/$rounds: $which done" >&2
  done
  i=$((i + 1))
done
node - "$out" "$rounds" <<'JS'
const fs = require('node:fs');
const [dir, rounds] = [process.argv[2], Number(process.argv[3])];
const runs = (w) => Array.from({ length: rounds }, (_, i) => JSON.parse(fs.readFileSync(`${dir}/${w}-${i + 1}.json`, 'utf8')));
const [olds, news] = [runs('old'), runs('new')];
const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const rows = [];
const add = (label, get) => {
  const o = olds.map(get), n = news.map(get);
  if (o.some((v) => v === undefined) || n.some((v) => v === undefined)) return;
  const ratios = o.map((v, i) => n[i] / v);
  rows.push([label, median(o).toFixed(4), median(n).toFixed(4), (median(n) / median(o)).toFixed(3), `${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)}`]);
};
for (const [i, m] of olds[0].matmul.entries())
  for (const shape of ['oneRow', 'shortRow', 'manyRows']) add(`${m.type} ${shape}`, (r) => r.matmul[i]?.[shape]?.medianMs);
for (const [i, a] of (olds[0].attention ?? []).entries()) add(`attention ctx ${a.context} x${a.sequences} (control)`, (r) => r.attention?.[i]?.medianMs);
console.log(`${rounds} alternating rounds, ${olds[0].settings.kernels}, ${olds[0].settings.threads} threads; ms, median of rounds`);
console.log(['case', 'old ms', 'new ms', 'new/old', 'per-round ratios'].join('\t'));
for (const r of rows) console.log(r.join('\t'));
JS
