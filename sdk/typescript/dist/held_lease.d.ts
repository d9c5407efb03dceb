import type { Task } from "./task.js";
import { type AbortCode } from "./task_aborted_error.js";
/**
 * Where a held lease stands:
 * - `running`: its handler runs;
 * - `finishing`: the handler returned and its outcome is being sent;
 * - `done`: answered, aborted or released; the lease is no longer held.
 */
export type LeasePhase = "running" | "finishing" | "done";
/**
 * One claimed task and its lease: the token, the task's AbortController, its
 * local deadline timer, and when the server last renewed it.
 */
export declare class HeldLease {
    readonly token: string;
    readonly task: Task;
    readonly deadlineMs: number;
    readonly controller: AbortController;
    phase: LeasePhase;
    /** Date.now() when the lease was last known to be renewed (claim, or a heartbeat sent before an `ok`). */
    renewedAt: number;
    /** True once a heartbeat has carried this lease. */
    heartbeated: boolean;
    /** Evidence calls of the handler not yet answered; the outcome waits for them. */
    readonly evidence: Set<Promise<unknown>>;
    private deadlineTimer;
    /**
     * deadlineMs is the task's deadline on the local clock: the claim's
     * arrival plus the time the server gave the task (deadline_at −
     * started_at), so that a skewed local clock does not abort it early.
     */
    constructor(token: string, task: Task, deadlineMs: number, now: number);
    get signal(): AbortSignal;
    get aborted(): boolean;
    /**
     * Aborts the handler's signal with code. Only a running handler is
     * aborted, and only once; returns true when this call aborted it.
     */
    abort(code: AbortCode): boolean;
    /** Calls onDeadline when the task's deadline passes; at once when it has. */
    armDeadline(onDeadline: () => void): void;
    disarm(): void;
}
