// sseData: the data lines of a stream whatever its chunking (a line, or a UTF-8 character,
// split across chunks), strings or bytes, other fields and comments skipped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sseData } from '../../src/bench/sse-data.js';

async function collect(chunks: (Uint8Array | string)[]): Promise<string[]> {
  async function* body(): AsyncGenerator<Uint8Array | string> {
    yield* chunks;
  }
  const out: string[] = [];
  for await (const d of sseData(body())) out.push(d);
  return out;
}

describe('sseData', () => {
  const stream = 'event: message_start\ndata: {"a":"é"}\n\n: a comment\ndata:{"b":2}\r\n\ndata: [DONE]\n\n';
  const want = ['{"a":"é"}', '{"b":2}', '[DONE]'];

  it('one chunk, as a string and as bytes', async () => {
    assert.deepEqual(await collect([stream]), want);
    assert.deepEqual(await collect([new TextEncoder().encode(stream)]), want);
  });

  it('every split point, through a two-byte character too', async () => {
    const bytes = new TextEncoder().encode(stream);
    for (let cut = 1; cut < bytes.length; cut++) assert.deepEqual(await collect([bytes.subarray(0, cut), bytes.subarray(cut)]), want, `split at byte ${cut}`);
  });

  it('a last line without its newline is not data yet', async () => {
    assert.deepEqual(await collect(['data: 1\ndata: 2']), ['1']);
  });
});
