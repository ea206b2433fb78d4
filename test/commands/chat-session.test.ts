// `loom chat`'s session with images: each user message's images go before its text as
// IMAGE_MARKERs, the prompt is handed over unrendered (a chat, or a text with images without a
// template) with every kept turn's images in order; without images, token ids as before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatSession } from '../../src/commands/chat-session.js';
import type { LLM } from '../../src/llm.js';
import { IMAGE_MARKER as M } from '../../src/pipeline/image-input.js';
import type { ChatPrompt, TextImagesPrompt } from '../../src/pipeline/prompt.js';
import type { ChatMessage } from '../../src/tokenizer/chat-template.js';

/** an LLM whose "tokens" are characters: enough to see what is rendered and what is cut */
function fakeLLM(maxModelLen = 1000): LLM {
  const encode = (text: string) => [...text].map((c) => c.charCodeAt(0));
  return {
    engine: { info: { maxModelLen } },
    model: { tokenizer: { encode } },
    chatPromptIds: (messages: readonly ChatMessage[]) => encode(messages.map((m) => `${m.role}:${m.content}`).join('|')),
  } as unknown as LLM;
}

const image = (n: number) => ({ bytes: new Uint8Array([n]), param: `img${n}` });

describe('ChatSession with images', () => {
  it('templated: markers before each message text, every kept image in order', () => {
    const s = new ChatSession(fakeLLM(), true, 'sys');
    assert.ok(Array.isArray(s.prompt('plain', [], 10)!.prompt), 'no images: token ids');
    s.record('first', 'ok', [image(1), image(2)]);
    s.record('second', 'fine');
    const next = s.prompt('third', [image(3)], 10)!;
    const p = next.prompt as ChatPrompt;
    assert.deepEqual(p.messages.map((m) => m.content), ['sys', `${M}${M}first`, 'ok', 'second', 'fine', `${M}third`]);
    assert.deepEqual(p.images!.map((i) => i.param), ['img1', 'img2', 'img3']);
    assert.equal(next.images, 3);
    assert.equal(p.addGenerationPrompt, true);
  });

  it('without a template: the transcript as text with its images', () => {
    const s = new ChatSession(fakeLLM(), false);
    s.record('look', ' a dot', [image(1)]);
    const p = s.prompt('again', [image(2)], 10)!.prompt as TextImagesPrompt;
    assert.equal(p.text, `${M}look a dot\n${M}again`);
    assert.deepEqual(p.images.map((i) => i.param), ['img1', 'img2']);
  });

  it('old turns (and their images) go first when the context fills', () => {
    const s = new ChatSession(fakeLLM(60), true);
    s.record('x'.repeat(30), 'y', [image(1)]);
    const p = s.prompt('q', [image(2)], 10)!.prompt as ChatPrompt;
    assert.deepEqual(p.messages.map((m) => m.content), [`${M}q`]);
    assert.deepEqual(p.images!.map((i) => i.param), ['img2']);
  });
});
