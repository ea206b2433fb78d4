// The server's one mapping of loom's named errors to OpenAI-shaped HTTP errors.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContextLengthExceededError, EngineRefusedError, InvalidArgumentError } from '../../src/errors.js';
import { HttpError, toAnthropicError, toOpenAIError, toVllmError } from '../../src/server/errors.js';

describe('toOpenAIError', () => {
  it("maps the pipeline's errors to the statuses and bodies clients saw from HttpErrors", () => {
    assert.deepEqual(toOpenAIError(new ContextLengthExceededError('too long', 'max_tokens')), {
      status: 400,
      body: { error: { message: 'too long', type: 'invalid_request_error', param: 'max_tokens', code: 'context_length_exceeded' } },
    });
    assert.equal(toOpenAIError(new ContextLengthExceededError('too long')).body.error.param, 'messages');
    assert.deepEqual(toOpenAIError(new InvalidArgumentError('top_p must be in (0, 1], got 2', 'top_p')), {
      status: 400,
      body: { error: { message: 'top_p must be in (0, 1], got 2', type: 'invalid_request_error', param: 'top_p', code: null } },
    });
    assert.deepEqual(toOpenAIError(new EngineRefusedError('no grammar engine')), {
      status: 400,
      body: { error: { message: 'no grammar engine', type: 'invalid_request_error', param: null, code: null } },
    });
    assert.equal(toOpenAIError(new HttpError(404, 'nope')).status, 404);
    assert.equal(toOpenAIError(new Error('boom')).status, 500);
  });
});

describe('toVllmError', () => {
  it("is vLLM's ErrorResponse: the type names the status, the code is the status", () => {
    assert.deepEqual(toVllmError(new ContextLengthExceededError('too long', 'max_tokens')), {
      status: 400,
      body: { error: { message: 'too long', type: 'BadRequestError', param: 'max_tokens', code: 400 } },
    });
    assert.deepEqual(toVllmError(new HttpError(404, 'The model `x` does not exist.')).body.error, { message: 'The model `x` does not exist.', type: 'NotFoundError', param: null, code: 404 });
    assert.equal(toVllmError(new Error('boom')).body.error.type, 'InternalServerError');
    assert.equal(toVllmError(new HttpError(429, 'busy')).body.error.type, 'Too Many Requests');
  });
});

describe('toAnthropicError', () => {
  it('the same classification in Anthropic\'s shape, its error type by status', () => {
    assert.deepEqual(toAnthropicError(new ContextLengthExceededError('too long', 'max_tokens')), { status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'too long' } } });
    const types = [401, 403, 404, 413, 429, 500, 503].map((status) => toAnthropicError(new HttpError(status, 'x')).body.error.type);
    assert.deepEqual(types, ['authentication_error', 'permission_error', 'not_found_error', 'request_too_large', 'rate_limit_error', 'api_error', 'overloaded_error']);
    assert.deepEqual(toAnthropicError(new Error('boom')), { status: 500, body: { type: 'error', error: { type: 'api_error', message: 'internal server error' } } });
  });
});
