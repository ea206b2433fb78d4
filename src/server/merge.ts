import { Slicer } from '../pipeline/slicer.js';

/**
 * Interleaves async iterables as their values arrive (several prompts of one request).
 * O(1) per value: each source's settled next() lands in one queue (a Promise.race over
 * every pending source per value would be O(sources) each, O(sources²) per request, and
 * would pile a handler per race on every long-pending promise).
 */
export async function* mergeAsync<T>(sources: AsyncIterator<T>[]): AsyncGenerator<T> {
  const ready: { i: number; r: IteratorResult<T> }[] = [];
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  let open = sources.length;
  const pull = (i: number): void => {
    sources[i]!.next().then(
      (r) => {
        ready.push({ i, r });
        wake?.();
      },
      (error: unknown) => {
        failure ??= { error };
        wake?.();
      },
    );
  };
  try {
    // many sources (a long prompt list) start in slices: each start is an engine add
    const slicer = new Slicer();
    for (let i = 0; i < sources.length; i++) {
      await slicer.tick();
      pull(i);
    }
    let head = 0;
    while (open > 0) {
      if (failure) throw failure.error;
      if (head === ready.length) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      const { i, r } = ready[head++]!;
      if (head > 1024 && head * 2 > ready.length) {
        ready.splice(0, head); // drop what was consumed, now and then
        head = 0;
      }
      if (r.done) open--;
      else {
        pull(i);
        yield r.value;
      }
    }
  } finally {
    await Promise.all(sources.map((s) => s.return?.()));
  }
}
