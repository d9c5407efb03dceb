import { unref } from "./backoff.js";
import { TaskAbortedError } from "./task_aborted_error.js";
/** Longest single timer (setTimeout's limit is 2^31 − 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * One claimed task and its lease: the token, the task's AbortController, its
 * local deadline timer, and when the server last renewed it.
 */
export class HeldLease {
    token;
    task;
    deadlineMs;
    controller = new AbortController();
    phase = "running";
    /** Date.now() when the lease was last known to be renewed (claim, or a heartbeat sent before an `ok`). */
    renewedAt;
    /** True once a heartbeat has carried this lease. */
    heartbeated = false;
    /** Evidence calls of the handler not yet answered; the outcome waits for them. */
    evidence = new Set();
    deadlineTimer;
    /**
     * deadlineMs is the task's deadline on the local clock: the claim's
     * arrival plus the time the server gave the task (deadline_at −
     * started_at), so that a skewed local clock does not abort it early.
     */
    constructor(token, task, deadlineMs, now) {
        this.token = token;
        this.task = task;
        this.deadlineMs = deadlineMs;
        this.renewedAt = now;
    }
    get signal() {
        return this.controller.signal;
    }
    get aborted() {
        return this.controller.signal.aborted;
    }
    /**
     * Aborts the handler's signal with code. Only a running handler is
     * aborted, and only once; returns true when this call aborted it.
     */
    abort(code) {
        if (this.phase !== "running" || this.aborted)
            return false;
        this.disarm();
        this.controller.abort(new TaskAbortedError(code));
        return true;
    }
    /** Calls onDeadline when the task's deadline passes; at once when it has. */
    armDeadline(onDeadline) {
        const at = this.deadlineMs;
        if (!Number.isFinite(at))
            return;
        const wait = () => {
            const left = at - Date.now();
            if (left <= 0) {
                this.deadlineTimer = undefined;
                onDeadline();
                return;
            }
            this.deadlineTimer = setTimeout(wait, Math.min(left, MAX_TIMER_MS));
            unref(this.deadlineTimer);
        };
        wait();
    }
    disarm() {
        clearTimeout(this.deadlineTimer);
        this.deadlineTimer = undefined;
    }
}
