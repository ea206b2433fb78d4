// Plain-text tables and number formats for benchmark reports.

/** Right-aligned columns (the first left-aligned), a header rule under the first row. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  const line = (row: readonly string[]): string =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd();
  const [head, ...body] = rows;
  if (!head) return '';
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** 3 significant digits, at least up to integers: 0.0123, 1.23, 12.3, 1234 */
export function fmt(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  if (a === 0) return '0';
  return x.toPrecision(3);
}

export function fmtBytes(b: number): string {
  if (b >= 2 ** 30) return `${fmt(b / 2 ** 30)} GiB`;
  if (b >= 2 ** 20) return `${fmt(b / 2 ** 20)} MiB`;
  if (b >= 2 ** 10) return `${fmt(b / 2 ** 10)} KiB`;
  return `${b.toFixed(0)} B`;
}

export function fmtSpread(mean: number, stdev: number): string {
  // rounding noise of identical runs is no spread
  return `${fmt(mean)} ± ${fmt(stdev <= 1e-9 * Math.abs(mean) ? 0 : stdev)}`;
}
