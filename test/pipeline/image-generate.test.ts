// A prompt with an image through the whole path, no HTTP: a PNG decoded and hashed, prepared
// by the projector, laid out at its marker, run by an engine on this thread and back as text.
// The projector is the token stand-in (fixtures/token-projector.ts: pixel i's red channel is
// the id of the image's i-th token, its embedding that token's), so the completion must be
// the one of the prompt with those tokens in the image's place.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { EngineCore } from '../../src/engine/engine.js';
import { InProcessEngineClient } from '../../src/engine/in-process-client.js';
import { resolveEngineConfig } from '../../src/engine/options.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { localContext } from '../../src/pipeline/context.js';
import type { PipelineContext } from '../../src/pipeline/context.js';
import { newSummary, runPrompt } from '../../src/pipeline/generate.js';
import { IMAGE_MARKER } from '../../src/pipeline/image-input.js';
import { inlineVision } from '../../src/pipeline/images.js';
import { resolveRequest } from '../../src/pipeline/request.js';
import type { PromptInput, RequestSpec } from '../../src/pipeline/request.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { tokenProjector } from '../fixtures/token-projector.js';

const model = fixtureModel('llama-f32');

function context(withVision: boolean): PipelineContext {
  const projector = tokenProjector(model);
  const engine = new EngineCore({ ...model, projector }, referenceKernels, resolveEngineConfig({ model: '', maxModelLen: 128 }, model.config, [...model.tokenizer.stopIds]));
  const ctx = localContext(new InProcessEngineClient(engine), model.tokenizer);
  return withVision ? { ...ctx, vision: inlineVision(projector) } : ctx;
}

const spec = (prompt: PromptInput, over: Partial<RequestSpec> = {}): RequestSpec => ({
  prompts: [prompt], promptParam: 'prompt', addSpecialTokens: true, maxTokens: 6, maxTokensParam: 'max_tokens', defaultMaxTokens: 6,
  sampling: { temperature: 0, ignoreEos: true }, idPrefix: 'img', ...over,
});

async function complete(ctx: PipelineContext, s: RequestSpec): Promise<{ text: string; ids: readonly number[] }> {
  const r = await resolveRequest(ctx, s);
  let text = '';
  for await (const e of runPrompt(ctx, r, 0, new AbortController().signal, newSummary())) text += e.text;
  return { text, ids: r.prompts[0]!.ids };
}

/** a width × 1 PNG whose pixel i has red = ids[i] */
async function tokenPng(ids: readonly number[]): Promise<Uint8Array> {
  const raw = Buffer.alloc(ids.length * 3);
  ids.forEach((id, i) => (raw[3 * i] = id));
  return sharp(raw, { raw: { width: ids.length, height: 1, channels: 3 } }).png().toBuffer();
}

describe('a prompt with an image, end to end', () => {
  it('completes as the prompt with the image\'s tokens in its place (text and chat prompts)', async () => {
    const enc = (s: string) => model.tokenizer.encode(s, { addSpecial: false, parseSpecial: true });
    const imageIds = [17, 42, 99, 150, 201]; // ids a pixel's red channel can carry
    const png = await tokenPng(imageIds);
    const bos = model.tokenizer.addBos ? [model.tokenizer.bosId!] : [];
    const textIds = [...bos, ...enc('Once upon'), ...imageIds, ...enc(' and then')];
    const plain = await complete(context(false), spec(textIds));
    const imaged = await complete(context(true), spec({ text: `Once upon${IMAGE_MARKER} and then`, images: [{ bytes: png, param: 'images[0]' }] }));
    assert.equal(imaged.ids.length, textIds.length);
    assert.ok(plain.text.length > 0);
    assert.equal(imaged.text, plain.text);
  });

  it('refuses images without a projector, with prompt logprobs, or with truncation; a marker count that is off is a 400', async () => {
    const png = await tokenPng([5, 6]);
    const images = [{ bytes: png, param: 'messages[0].content[1]' }];
    const chat = { messages: [{ role: 'user' as const, content: `what is ${IMAGE_MARKER}?` }], images };
    await assert.rejects(resolveRequest(context(false), spec(chat, { promptParam: 'messages' })), /--mmproj/);
    await assert.rejects(resolveRequest(context(true), spec(chat, { sampling: { promptLogprobs: 1 } })), /prompt_logprobs cannot be used with images/);
    await assert.rejects(resolveRequest(context(true), spec(chat, { truncatePromptTokens: 8 })), /truncate_prompt_tokens/);
    await assert.rejects(resolveRequest(context(true), spec({ ...chat, images: [...images, ...images] })), /1 image marker .* for 2 images/);
  });
});
