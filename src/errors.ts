// Named domain errors. The CLI prints `message` on one line (no stack) and exits 1; the
// library hands them to its caller as they are; the server maps each to an API's error
// shape and status in one place (src/server/errors.ts).

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

/** A prompt plus requested tokens does not fit the model's context; `param` names the field (as the API spells it) that overflowed. */
export class ContextLengthExceededError extends LoomError {
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** The engine refused a request the pipeline had resolved (it can never run there). */
export class EngineRefusedError extends LoomError {}

/** A caller passed a value we cannot use (bad CLI option, bad sampling parameter); `param` names it as the API spells it. */
export class InvalidArgumentError extends LoomError {
  constructor(
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}
