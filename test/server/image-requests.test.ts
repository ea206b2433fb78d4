// Each API's images as the pipeline receives them: IMAGE_MARKER in the message text where each
// image was (text parts joined as loom joins them, no separator around a marker, as
// llama-server's concat_content_parts puts none next to a media marker) and the file bytes in
// the chat prompt's `images`, in marker order. Refusals name the part.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IMAGE_MARKER as M } from '../../src/pipeline/image-input.js';
import type { ImageInput } from '../../src/pipeline/image-input.js';
import type { ChatPrompt, PromptInput, TextImagesPrompt } from '../../src/pipeline/prompt.js';
import { messagesSpec } from '../../src/server/anthropic-request.js';
import type { AnthropicBody } from '../../src/server/anthropic-body.js';
import type { ServerContext } from '../../src/server/context.js';
import { HttpError } from '../../src/server/errors.js';
import { IMAGE_DEFAULTS } from '../../src/server/image-fetch.js';
import { ollamaChatSpec, ollamaGenerateSpec } from '../../src/server/ollama-request.js';
import { chatMessages, chatSpec } from '../../src/server/openai-request.js';
import type { ChatBody } from '../../src/server/openai-request.js';
import { responsesSpec } from '../../src/server/responses-request.js';
import type { ResponsesBody } from '../../src/server/responses-request.js';
import { GIF_1X1, PNG_1X1, bytesOf, gifDataUrl, pngDataUrl, sameBytes } from '../fixtures/api-images.js';

/** what the parsers read of a server: its name, options, a template (Ollama asks whether there is one) */
function fakeCtx(chatTemplate: string | undefined = '{{ messages }}'): ServerContext {
  return { options: { servedModelName: 'm', maxModelLen: 4096, images: IMAGE_DEFAULTS, log: () => {}, chatTemplate }, tokenizer: { chatTemplate }, ignoredFields: new Set() } as unknown as ServerContext;
}

const chatOf = (p: PromptInput | undefined): ChatPrompt => p as ChatPrompt;
const refused = (status: number, message: RegExp, param?: string) => (e: unknown) => e instanceof HttpError && e.status === status && message.test(e.message) && (param === undefined || e.param === param);

function assertImages(images: readonly ImageInput[] | undefined, expected: [string, string][]): void {
  assert.equal(images?.length, expected.length);
  expected.forEach(([b64, param], i) => {
    assert.ok(sameBytes(images![i]!.bytes, bytesOf(b64)), `image ${i}`);
    assert.equal(images![i]!.param, param);
  });
}

describe('OpenAI chat: image_url parts', () => {
  it('markers where the parts were, bytes in order; the object and bare-string forms, detail accepted', async () => {
    const body: ChatBody = {
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Compare ' }, { type: 'image_url', image_url: { url: pngDataUrl, detail: 'high' } }, { type: 'text', text: ' with ' }, { type: 'image_url', image_url: gifDataUrl }] },
        { role: 'assistant', content: 'Done.' },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: gifDataUrl } }, { type: 'text', text: 'And this?' }] },
        // bare base64, as llama-server takes it
        { role: 'user', content: [{ type: 'image_url', image_url: { url: PNG_1X1 } }] },
      ],
    };
    const p = chatOf((await chatSpec(fakeCtx(), body)).spec.prompts[0]);
    assert.deepEqual(p.messages.map((m) => m.content), ['Be brief.', `Compare ${M} with ${M}`, 'Done.', `${M}And this?`, M]);
    assertImages(p.images, [[PNG_1X1, 'messages[1].content[1].image_url'], [GIF_1X1, 'messages[1].content[3].image_url'], [GIF_1X1, 'messages[3].content[0].image_url'], [PNG_1X1, 'messages[4].content[0].image_url']]);
  });

  it('a text-only chat carries no images field', async () => {
    const p = chatOf((await chatSpec(fakeCtx(), { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }] })).spec.prompts[0]);
    assert.equal(p.messages[0]!.content, 'ab');
    assert.equal(p.images, undefined);
  });

  it('refusals: audio and video parts, unknown parts, a missing url, a URL without allowed hosts, the marker in the text', async () => {
    const ask = (content: ChatBody['messages'][number]['content']) => chatSpec(fakeCtx(), { model: 'm', messages: [{ role: 'user', content }] });
    await assert.rejects(ask([{ type: 'input_audio' }]), refused(400, /messages\[0\]\.content\[0\]: input_audio parts are not supported: loom reads text and images/));
    await assert.rejects(ask([{ type: 'video_url' }]), refused(400, /video_url parts are not supported/));
    await assert.rejects(ask([{ type: 'hologram' }]), refused(400, /"hologram" are not supported \(text, image_url\)/));
    await assert.rejects(ask([{ type: 'image_url', image_url: {} }]), refused(400, /needs image_url.url/));
    await assert.rejects(ask([{ type: 'image_url', image_url: 'https://example.com/cat.png' }]), refused(400, /does not fetch image URLs/, 'messages[0].content[0].image_url'));
    await assert.rejects(ask([{ type: 'image_url', image_url: 'data:text/plain;base64,aGk=' }]), refused(400, /is not an image/));
    await assert.rejects(ask([{ type: 'text', text: `see ${M}` }, { type: 'image_url', image_url: pngDataUrl }]), refused(400, /contains <__media__>/));
  });

  it('where images cannot go (the template-only paths: /tokenize, LMDeploy), an image part is a clear 400', () => {
    assert.throws(() => chatMessages([{ role: 'user', content: [{ type: 'image_url', image_url: pngDataUrl }] }]), refused(400, /image parts are not accepted here/));
  });
});

describe('Anthropic Messages: image blocks', () => {
  const body = (content: AnthropicBody['messages'][number]['content']): AnthropicBody => ({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content }] });

  it('base64 blocks (and in a tool_result) as markers, bytes in order', async () => {
    const b: AnthropicBody = {
      model: 'm',
      max_tokens: 8,
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1X1 } }, { type: 'text', text: 'What is this?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'screen: ' }, { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: GIF_1X1 } }] }] },
      ],
    };
    const p = chatOf((await messagesSpec(fakeCtx(), b)).prompts[0]);
    assert.equal(p.messages[0]!.content, `${M}What is this?`);
    assert.equal(p.messages.find((m) => m.role === 'tool')!.content, `screen: ${M}`);
    assertImages(p.images, [[PNG_1X1, 'messages.0.content.0.source'], [GIF_1X1, 'messages.2.content.0.content.1.source']]);
  });

  it('refusals: a media type Anthropic does not take, bad base64, file sources, URLs without allowed hosts', async () => {
    await assert.rejects(messagesSpec(fakeCtx(), body([{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: PNG_1X1 } }])), refused(400, /media_type: Input should be 'image\/jpeg'/));
    await assert.rejects(messagesSpec(fakeCtx(), body([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'not base64!' } }])), refused(400, /not valid base64/));
    await assert.rejects(messagesSpec(fakeCtx(), body([{ type: 'image', source: { type: 'file', data: 'file_1' } as never }])), refused(400, /Files API/));
    await assert.rejects(messagesSpec(fakeCtx(), body([{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }])), refused(400, /does not fetch image URLs/));
    await assert.rejects(messagesSpec(fakeCtx(), body([{ type: 'image' }])), refused(400, /an image source is/));
  });
});

describe('Responses: input_image', () => {
  it('markers and bytes, across a previous response\'s items and this input; detail accepted', async () => {
    const history = [{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: gifDataUrl, detail: 'low' }] }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A dot.' }] }];
    const b: ResponsesBody = { model: 'm', input: [{ role: 'user', content: [{ type: 'input_text', text: 'And ' }, { type: 'input_image', image_url: pngDataUrl, detail: 'auto' }, { type: 'input_text', text: '?' }] }] };
    const p = chatOf((await responsesSpec(fakeCtx(), b, history)).spec.prompts[0]);
    assert.deepEqual(p.messages.map((m) => m.content), [M, 'A dot.', `And ${M}?`]);
    assertImages(p.images, [[GIF_1X1, 'input[0].content[0].image_url'], [PNG_1X1, 'input[2].content[1].image_url']]);
  });

  it('refusals: file_id, no image_url, input_file', async () => {
    const ask = (part: object) => responsesSpec(fakeCtx(), { model: 'm', input: [{ role: 'user', content: [part as never] }] }, []);
    await assert.rejects(ask({ type: 'input_image', file_id: 'file-1' }), refused(400, /file_id is not supported \(loom has no Files API\)/, 'input'));
    await assert.rejects(ask({ type: 'input_image' }), refused(400, /needs image_url/));
    await assert.rejects(ask({ type: 'input_file', file_id: 'x' }), refused(400, /"input_file" is not supported \(text and input_image\)/));
  });
});

describe('Ollama: images', () => {
  it('/api/chat: images before the message text, or at its [img] placeholders in order', async () => {
    const spec = await ollamaChatSpec(fakeCtx(), {
      model: 'm',
      messages: [
        { role: 'user', content: 'What is in this picture?', images: [PNG_1X1, GIF_1X1] },
        { role: 'assistant', content: 'Two dots.' },
        { role: 'user', content: 'Left [img], right [img].', images: [GIF_1X1] },
      ],
    });
    const p = chatOf(spec!.prompts[0]);
    assert.deepEqual(p.messages.map((m) => m.content), [`${M}${M}What is in this picture?`, 'Two dots.', `Left ${M}, right [img].`]);
    assertImages(p.images, [[PNG_1X1, 'messages[0].images[0]'], [GIF_1X1, 'messages[0].images[1]'], [GIF_1X1, 'messages[2].images[0]']]);
  });

  it('/api/chat without a template: the plain transcript with its images', async () => {
    const spec = await ollamaChatSpec(fakeCtx(''), { model: 'm', messages: [{ role: 'user', content: 'hi', images: [PNG_1X1] }] });
    const p = spec!.prompts[0] as TextImagesPrompt;
    assert.equal(p.text, `${M}hi`);
    assertImages(p.images, [[PNG_1X1, 'messages[0].images[0]']]);
  });

  it('/api/generate: images before the prompt in the user turn; raw: before the prompt text; with context refused', async () => {
    const made = await ollamaGenerateSpec(fakeCtx(), { model: 'm', prompt: 'Describe it.', system: 'Be brief.', images: [PNG_1X1] });
    assert.equal(made?.images, true);
    const p = chatOf(made!.spec.prompts[0]);
    assert.deepEqual(p.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: `${M}Describe it.` }]);
    assertImages(p.images, [[PNG_1X1, 'images[0]']]);
    const raw = (await ollamaGenerateSpec(fakeCtx(), { model: 'm', prompt: 'Describe it.', raw: true, images: [GIF_1X1] }))!.spec.prompts[0] as TextImagesPrompt;
    assert.equal(raw.text, `${M}Describe it.`);
    assertImages(raw.images, [[GIF_1X1, 'images[0]']]);
    // an image alone is a prompt
    assert.ok(await ollamaGenerateSpec(fakeCtx(), { model: 'm', images: [PNG_1X1] }));
    await assert.rejects(ollamaGenerateSpec(fakeCtx(), { model: 'm', prompt: 'x', context: [1, 2], images: [PNG_1X1] }), refused(400, /context .* cannot be continued with images/));
  });

  it('refusals: not base64, not a list, not strings, not an image', async () => {
    const chat = (images: unknown) => ollamaChatSpec(fakeCtx(), { model: 'm', messages: [{ role: 'user', content: 'x', images: images as unknown[] }] });
    await assert.rejects(chat(['%%%']), refused(400, /messages\[0\]\.images\[0\]: the image is not valid base64/));
    await assert.rejects(chat([42]), refused(400, /must be a base64 string/));
    await assert.rejects(chat('abc'), refused(400, /must be a list of base64 strings/));
    await assert.rejects(chat([Buffer.from('just text').toString('base64')]), refused(400, /not an image loom reads/));
  });
});
