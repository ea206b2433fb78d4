// Tool-call arguments in one canonical form, whatever order a client sends their keys in:
// objects' keys sorted (recursively), arrays kept in order. A chat template renders the
// arguments it is given (often with tojson), so the same call resent with its keys in
// another order would otherwise render to other tokens and miss the prefix cache from there on.

/** The value with every object's keys in sorted order (a fresh copy; arrays keep their order). */
export function canonicalJsonValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalJsonValue);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = canonicalJsonValue((value as Record<string, unknown>)[key]);
  return out;
}

/** JSON text with sorted keys: equal for equal values, however their keys were ordered. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalJsonValue(value));
}
