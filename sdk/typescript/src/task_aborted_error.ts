/**
 * Why a task's signal was aborted:
 * - `cancelled`: a client cancelled the task;
 * - `timed_out`: the task's deadline passed (seen locally or by the server);
 * - `lease_lost`: the lease is no longer this worker's (recovered after
 *   missed heartbeats, or refused);
 * - `shutdown`: the worker stopped and the grace period ran out; the task
 *   is handed back to the queue without charging the attempt.
 */
export type AbortCode = "cancelled" | "timed_out" | "lease_lost" | "shutdown";

/**
 * The `reason` of an aborted task signal: `signal.throwIfAborted()` and an
 * aborted `fetch(url, { signal })` throw it. Whatever the handler does after
 * it, its result is dropped, never sent.
 */
export class TaskAbortedError extends Error {
  override readonly name = "TaskAbortedError";
  readonly code: AbortCode;

  constructor(code: AbortCode) {
    super(`docket: task aborted: ${code}`);
    this.code = code;
  }
}
