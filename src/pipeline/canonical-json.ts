// Tool-call arguments in one key order, whatever order a client sends them back in: the
// tool's schema order first (the order the model writes them in, and the one a forced-call
// grammar produces), then any other keys sorted. A conversation's history then renders to
// the same tokens on every later turn, so the prefix cache holds across an agent's loop.

/** A copy of `value` whose objects list their keys in `schema`'s `properties` order, then the rest sorted. */
export function canonicalArguments(value: unknown, schema?: unknown): unknown {
  if (Array.isArray(value)) {
    const items = isObject(schema) ? schema['items'] : undefined;
    return value.map((v) => canonicalArguments(v, items));
  }
  if (!isObject(value)) return value;
  const props = isObject(schema) && isObject(schema['properties']) ? schema['properties'] : {};
  const declared = Object.keys(props).filter((k) => Object.hasOwn(value, k));
  const rest = Object.keys(value)
    .filter((k) => !Object.hasOwn(props, k))
    .sort();
  const out: Record<string, unknown> = {};
  for (const k of [...declared, ...rest]) out[k] = canonicalArguments(value[k], props[k]);
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
