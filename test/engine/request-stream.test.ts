// The frontend's view of one request (RequestStream): deltas the consumer has not read yet
// merge per completion and are never dropped, the stream ends after every completion's
// finish, an engine failure rejects a waiting reader, and leaving early aborts exactly once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RequestDelta } from '../../src/engine/protocol.js';
import { EngineDeadError, RequestStream } from '../../src/engine/request-stream.js';

const delta = (index: number, tokens: number[], extra: Partial<RequestDelta> = {}): RequestDelta => ({
  id: 'r',
  index,
  tokenIds: Int32Array.from(tokens),
  times: Float64Array.from(tokens.map((t) => t * 10)),
  ...extra,
});

async function drain(s: RequestStream): Promise<RequestDelta[]> {
  const out: RequestDelta[] = [];
  for await (const d of s) out.push(d);
  return out;
}

describe('RequestStream', () => {
  it('merges unread deltas per completion, in arrival order, and ends after n finishes', async () => {
    const s = new RequestStream('r', 2, () => assert.fail('not aborted'));
    s.push(delta(0, [1, 2], { cachedPromptTokens: 4, firstScheduledTime: 5 }));
    s.push(delta(1, [7]));
    s.push(delta(0, [3], { logprobs: Float32Array.of(-1) }));
    s.push(delta(1, [8], { finishReason: 'stop', stopTokenId: 9 }));
    s.push(delta(0, [4], { finishReason: 'length' }));
    assert.equal(s.finished, true);
    const got = await drain(s);
    assert.deepEqual(got.map((d) => [d.index, [...d.tokenIds], d.finishReason]), [
      [0, [1, 2, 3, 4], 'length'],
      [1, [7, 8], 'stop'],
    ]);
    assert.deepEqual([...got[0]!.times], [10, 20, 30, 40]);
    assert.equal(got[0]!.cachedPromptTokens, 4, 'first-delta facts come from the first delta');
    assert.equal(got[0]!.firstScheduledTime, 5);
    assert.equal(got[1]!.stopTokenId, 9, 'last-delta facts from the last');
  });

  it('hands a delta straight to a waiting reader', async () => {
    const s = new RequestStream('r', 1, () => {});
    const next = s.next();
    s.push(delta(0, [5]));
    assert.deepEqual([...(await next).value!.tokenIds], [5]);
  });

  it('an engine failure rejects a waiting reader and later reads', async () => {
    const s = new RequestStream('r', 1, () => {});
    const next = s.next();
    s.fail(new EngineDeadError('gone'));
    await assert.rejects(next, EngineDeadError);
    await assert.rejects(s.next(), EngineDeadError);
  });

  it('an error delta ends every completion at once', async () => {
    const s = new RequestStream('r', 3, () => {});
    s.push(delta(0, [], { finishReason: 'abort', error: 'refused' }));
    assert.equal(s.finished, true);
    assert.equal((await drain(s)).length, 1);
  });

  it('leaving early aborts once, ends a parked reader, and yields nothing more', async () => {
    let aborts = 0;
    const s = new RequestStream('r', 1, () => aborts++);
    const parked = s.next();
    await s.return();
    await s.return();
    assert.equal(aborts, 1);
    assert.equal((await parked).done, true);
    s.push(delta(0, [1]));
    assert.equal((await s.next()).done, true);
  });

  it('a finished stream does not abort when left', async () => {
    let aborts = 0;
    const s = new RequestStream('r', 1, () => aborts++);
    s.push(delta(0, [1], { finishReason: 'stop' }));
    for await (const _ of s) break;
    assert.equal(aborts, 0);
  });
});
