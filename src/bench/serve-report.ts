// The report of `bench serve`: text in vLLM's `bench serve` layout, and one flat JSON object
// with vLLM's key names (mean_ttft_ms, …) plus the settings, for --json / --output-file.
import type { LatencyFigures } from './serve-metrics.js';
import type { ServeReport } from './serve.js';

const WIDTH = 50;
const rule = (title: string, fill: string): string => {
  const t = title ? ` ${title} ` : '';
  const left = Math.floor((WIDTH - t.length) / 2);
  return fill.repeat(Math.max(0, left)) + t + fill.repeat(Math.max(0, WIDTH - left - t.length));
};
const row = (label: string, value: string | number): string => `${label.padEnd(40)} ${typeof value === 'number' ? fixed(value) : value}`;
const fixed = (x: number): string => (Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(2)) : 'n/a');

export function formatServeReport(report: ServeReport): string {
  const s = report.settings;
  const f = report.figures;
  const lat = (title: string, name: string, l: LatencyFigures): string[] => [
    rule(title, '-'),
    row(`Mean ${name} (ms):`, l.mean),
    row(`Median ${name} (ms):`, l.median),
    row(`P99 ${name} (ms):`, l.p99),
  ];
  const lines = [
    rule('Serving Benchmark Result', '='),
    row('Backend:', `${s.backend} (${s.endpoint})`),
    row('Successful requests:', f.completed),
    row('Failed requests:', f.failed),
    ...f.errors.map((e) => `  ${e.count} × ${e.message.length > 120 ? e.message.slice(0, 117) + '...' : e.message}`),
    row('Maximum request concurrency:', s.maxConcurrency ?? 'unlimited'),
    row('Request rate configured (RPS):', Number.isFinite(s.requestRate) ? s.requestRate : 'inf'),
    row('Benchmark duration (s):', f.durationS),
    row('Total input tokens:', f.totalInputTokens),
    row('Total generated tokens:', f.totalOutputTokens),
    row('Request throughput (req/s):', f.requestThroughput),
    row('Input token throughput (tok/s):', f.inputThroughput),
    row('Output token throughput (tok/s):', f.outputThroughput),
    row('Total token throughput (tok/s):', f.totalTokenThroughput),
    ...lat('Time to First Token', 'TTFT', f.ttftMs),
    ...lat('Time per Output Token (excl. 1st token)', 'TPOT', f.tpotMs),
    ...lat('Inter-token Latency', 'ITL', f.itlMs),
    ...lat('End-to-end Latency', 'E2EL', f.e2elMs),
    rule('', '='),
  ];
  return lines.join('\n');
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** One flat object: settings, then every figure (NaN → null, rate inf → "inf"). */
export function serveReportJson(report: ServeReport): Record<string, unknown> {
  const s = report.settings;
  const f = report.figures;
  const out: Record<string, unknown> = {
    date: report.date,
    backend: s.backend,
    endpoint: s.endpoint,
    base_url: s.baseUrl,
    model_id: s.model,
    tokenizer_id: s.tokenizerSource,
    dataset_name: s.datasetName,
    ...(s.datasetPath !== undefined && { dataset_path: s.datasetPath }),
    num_prompts: s.numPrompts,
    ...(s.datasetName === 'random' && { random_input_len: s.randomInputLen, random_output_len: s.randomOutputLen, random_range_ratio: s.randomRangeRatio }),
    ...(s.sharegptOutputLen !== undefined && { sharegpt_output_len: s.sharegptOutputLen }),
    request_rate: Number.isFinite(s.requestRate) ? s.requestRate : 'inf',
    max_concurrency: s.maxConcurrency ?? null,
    seed: s.seed,
    warmup_requests: s.warmupRequests,
    stream: s.stream,
    ignore_eos: s.ignoreEos,
    completed: f.completed,
    failed: f.failed,
    errors: f.errors,
    duration: f.durationS,
    total_input_tokens: f.totalInputTokens,
    total_output_tokens: f.totalOutputTokens,
    request_throughput: finite(f.requestThroughput),
    input_throughput: finite(f.inputThroughput),
    output_throughput: finite(f.outputThroughput),
    total_token_throughput: finite(f.totalTokenThroughput),
  };
  for (const [name, l] of [['ttft', f.ttftMs], ['tpot', f.tpotMs], ['itl', f.itlMs], ['e2el', f.e2elMs]] as const) {
    out[`mean_${name}_ms`] = finite(l.mean);
    out[`median_${name}_ms`] = finite(l.median);
    out[`std_${name}_ms`] = finite(l.std);
    out[`p99_${name}_ms`] = finite(l.p99);
  }
  return out;
}
