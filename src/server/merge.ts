/** Interleaves async iterables as their values arrive (several prompts of one request). */
export async function* mergeAsync<T>(sources: AsyncIterator<T>[]): AsyncGenerator<T> {
  const pending = new Map<number, Promise<{ i: number; r: IteratorResult<T> }>>();
  const pull = (i: number): void => {
    pending.set(i, sources[i]!.next().then((r) => ({ i, r })));
  };
  sources.forEach((_, i) => pull(i));
  try {
    while (pending.size > 0) {
      const { i, r } = await Promise.race(pending.values());
      if (r.done) pending.delete(i);
      else {
        pull(i);
        yield r.value;
      }
    }
  } finally {
    await Promise.all(sources.map((s) => s.return?.()));
  }
}
