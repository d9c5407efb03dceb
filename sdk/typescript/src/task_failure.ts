/**
 * Thrown by a handler to fail its task with a code of its own.
 *
 * ```ts
 * throw new TaskFailure("bad_image", "not a PNG", { retryable: false });
 * ```
 *
 * `code` is lowercase snake case, at most 64 bytes (the server turns any
 * other into `workflow_error`); `message` is a short human reason, at most
 * 1,024 bytes (longer is cut), shown to the task's own tenant only. A
 * retryable failure (the default, as in Temporal and Hatchet) is queued
 * again with backoff while attempts remain; `retryable: false` ends the task
 * `failed` at once.
 *
 * Any other error a handler throws fails the task retryable with code
 * `workflow_error` and the error's name as its message: never its message
 * text, which may hold input.
 */
export class TaskFailure extends Error {
  override readonly name = "TaskFailure";
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retryable = options.retryable ?? true;
  }
}
