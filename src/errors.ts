// Named domain errors. The CLI prints `message` on one line (no stack) and exits 1;
// the server (later) maps each to an OpenAI error shape in one place.

export class LoomError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A model file or folder is missing, truncated, corrupt or not what we can run. Names the file. */
export class ModelFormatError extends LoomError {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: ${problem}`);
  }
}

/** The file is well formed but uses something loom does not implement (tensor type, architecture). */
export class UnsupportedModelError extends LoomError {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${file}: ${problem}`);
  }
}

/** A prompt plus requested tokens does not fit the model's context. */
export class ContextLengthExceededError extends LoomError {}

/** A caller passed a value we cannot use (bad CLI option, bad sampling parameter); `param` names it as the API spells it. */
export class InvalidArgumentError extends LoomError {
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}
