import { type FetchFunction } from "./http_transport.js";
import { type Logger } from "./logger.js";
import { type Pool, type Task } from "./task.js";
import type { AbortCode } from "./task_aborted_error.js";
export interface WorkerOptions {
    /** The server, e.g. `http://127.0.0.1:8080`. */
    url: string;
    /** A worker key (role `worker`). */
    key: string;
    /** How many handlers run at once. */
    slots: number;
    /** Claim only from this pool; default both. */
    pool?: Pool;
    /** Names this process to operators (1–128 visible ASCII); default `<hostname>/pid-<pid>`. */
    workerId?: string;
    /** Long-poll of a claim while there is nothing to run, 0–60,000 ms; default 20,000. */
    waitMs?: number;
    /** How long stop() lets running handlers finish before aborting them; default 10,000 ms. */
    shutdownGraceMs?: number;
    /** Where errors are reported (codes only); default: errors with console.warn. */
    logger?: Logger;
    /** The fetch function to call; default the global fetch. */
    fetch?: FetchFunction;
}
/** What a handler gets beside its task. */
export interface TaskContext {
    /**
     * Aborted when the task is cancelled, times out, loses its lease, or the
     * worker shuts down past its grace; `signal.reason` is a TaskAbortedError
     * whose `code` says which. Pass it on (`fetch(url, { signal })`) or check
     * it; a result returned after it aborted is dropped, never sent.
     */
    readonly signal: AbortSignal;
    /**
     * Records an evidence item under the task's current attempt. Resolves once
     * the server has stored it; rejects with the signal's reason when the
     * lease is gone. The task's outcome is sent only after its evidence.
     */
    evidence(kind: string, body: unknown): Promise<void>;
    /**
     * The outcome of each task this one depends on (`depends_on` at
     * submission), in the order given: fan-in. The task runs only once every
     * dependency succeeded, unless it was submitted with
     * `on_dependency_failure: "run"`. Empty for a task without dependencies.
     * Rejects with a DocketError `lease_lost` when the server refuses the
     * lease.
     */
    dependencyResults(): Promise<DependencyResult[]>;
}
/** The outcome of one task another depends on. */
export interface DependencyResult {
    readonly id: string;
    readonly state: string;
    readonly result: unknown;
    readonly error: {
        code: string;
        message?: string;
    } | null;
}
/**
 * Runs one task. Its return value (JSON) is the task's result; throwing a
 * TaskFailure fails the task with its code; any other error fails it,
 * retryable, with code `workflow_error`.
 */
export type Handler<I = unknown, R = unknown> = (task: Task<I>, ctx: TaskContext) => R | Promise<R>;
export interface RunOptions {
    /**
     * Install SIGINT and SIGTERM handlers that stop the worker gracefully
     * while run() is active. A second signal during the stop gives the
     * process its default action (exit).
     */
    signals?: boolean;
}
/** Counters of a worker since it started. */
export interface WorkerStats {
    readonly slots: number;
    /** Handlers that have not returned, including aborted ones that ignore their signal. */
    readonly running: number;
    /** Leases held: running handlers, and outcomes not yet answered. */
    readonly held: number;
    readonly claimed: number;
    /** Outcomes the server took (`ok`): successes and failures. */
    readonly succeeded: number;
    readonly failed: number;
    /** Outcomes the server refused (`lease_lost`, `conflict`) or that could not be sent. */
    readonly refused: number;
    /** Results dropped because the task had been aborted first. */
    readonly dropped: number;
    /** Leases handed back at shutdown. */
    readonly released: number;
    readonly aborted: Readonly<Record<AbortCode, number>>;
    /** Heartbeat calls sent. */
    readonly heartbeats: number;
}
/**
 * A remote worker: claims tasks of the workflows it has handlers for, runs
 * them in at most `slots` handlers at once, heartbeats their leases with
 * one call per interval, and sends their outcomes in batches.
 *
 * ```ts
 * const worker = new Worker({ url, key, slots: 8 });
 * worker.handle("images.resize", async (task, { signal }) => resize(task.input, signal));
 * await worker.run({ signals: true }); // until stop(), SIGINT or SIGTERM
 * ```
 *
 * A handler whose task is aborted (cancelled, timed out, lease lost,
 * shutdown) sees its signal abort; its result is dropped. JavaScript cannot
 * stop a handler that ignores its signal: its slot stays taken until it
 * returns, so that the worker never runs more than `slots` handlers at once.
 */
export declare class Worker {
    private readonly transport;
    private readonly slots;
    private readonly pool;
    private readonly waitMs;
    private readonly shutdownGraceMs;
    private readonly logger;
    /** The worker_id this worker sends. */
    readonly workerId: string;
    private readonly handlers;
    private readonly leases;
    private readonly heartbeater;
    private readonly finishes;
    private readonly evidenceSender;
    private readonly claimRetry;
    private readonly stopController;
    private state;
    private started;
    /** Aborted handlers not yet returned: reported if they ignore the abort too long. */
    private readonly ignoredAbortTimers;
    private busy;
    private slotWaiters;
    private drainWaiters;
    /** Outcomes waiting for their task's evidence before they are sent. */
    private readonly preparing;
    private claimAbort;
    private fatal;
    private resolveDone;
    private readonly done;
    private counts;
    constructor(options: WorkerOptions);
    /** Registers the handler of a workflow (a registered remote workflow name). */
    handle<I = unknown, R = unknown>(workflow: string, handler: Handler<I, R>): this;
    /**
     * Claims and runs tasks until stop() (or a signal, with `signals: true`);
     * resolves once the shutdown is complete. Rejects, after shutting down,
     * when the server refuses the worker itself (a bad key, a workflow that is
     * not registered: 4xx other than 408 and 429).
     */
    run(options?: RunOptions): Promise<void>;
    /**
     * Stops gracefully: no new claims; running handlers have shutdownGraceMs
     * to return (their leases are heartbeated meanwhile); the rest are aborted
     * with `shutdown` and their leases released (queued again, attempt not
     * charged); every outcome is flushed. Resolves when that is done (as run()
     * does). Idempotent.
     */
    stop(): Promise<void>;
    /** A snapshot of the worker's counters. */
    stats(): WorkerStats;
    private claimLoop;
    private claim;
    private waitForSlot;
    private wakeSlotWaiters;
    private start;
    private complete;
    private failureJson;
    private send;
    private dependencyResults;
    private evidence;
    /** Aborts a running lease and stops holding it (no heartbeat, no outcome). */
    private lose;
    private failWith;
    /** A lease left `running` (returned or aborted): wake the shutdown when none is left. */
    private leftRunning;
    private liveCount;
    private shutdown;
    /** Hands leases back: queued again at once, attempt not charged. */
    private release;
    private installSignals;
}
