/**
 * The `reason` of an aborted task signal: `signal.throwIfAborted()` and an
 * aborted `fetch(url, { signal })` throw it. Whatever the handler does after
 * it, its result is dropped, never sent.
 */
export class TaskAbortedError extends Error {
    name = "TaskAbortedError";
    code;
    constructor(code) {
        super(`docket: task aborted: ${code}`);
        this.code = code;
    }
}
