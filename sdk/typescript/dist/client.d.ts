import { type FetchFunction } from "./http_transport.js";
import type { Pool } from "./task.js";
import { type Evidence, type TaskEvent, type TaskInfo } from "./task_info.js";
export interface ClientOptions {
    /** The server, e.g. `http://127.0.0.1:8080`. */
    url: string;
    /** An API key (member or admin) of the tenant. */
    key: string;
    /** The fetch function to call; default the global fetch. */
    fetch?: FetchFunction;
}
/** Options of a submission; all optional but the idempotency key in a batch. */
export interface SubmitOptions {
    /**
     * Makes the submission safe to retry: the same key and request return the
     * same task (`replayed: true`); the same key with another request is 409
     * `idempotency_conflict`. Default: a random UUID (then a retry of the call
     * makes a second task: pass your own key to retry safely).
     */
    idempotencyKey?: string;
    /** Overrides the workflow's pool. */
    pool?: Pool;
    /** Deadline from admission (or from runAt). */
    timeoutMs?: number;
    /** Higher first within the tenant, −1000…1000. */
    priority?: number;
    maxAttempts?: number;
    /** Not started before this time. */
    runAt?: Date | string;
    /** At most the workflow's concurrency_per_key tasks of one key run at once. */
    concurrencyKey?: string;
    /** Task IDs (or, in a batch, idempotency keys of earlier items) that must succeed first. */
    dependsOn?: string[];
    onDependencyFailure?: "fail" | "run";
    /** A W3C traceparent for the submission (single submits only). */
    traceparent?: string;
}
export interface SubmitResult {
    task: TaskInfo;
    /** True when an earlier submission with the same key made the task (HTTP 200). */
    replayed: boolean;
}
export interface SubmitBatchItem extends Omit<SubmitOptions, "traceparent" | "idempotencyKey"> {
    workflow: string;
    input: unknown;
    idempotencyKey: string;
}
/** One item's answer in a batch: the status a single submit would have had. */
export interface SubmitBatchResult {
    /** 201 new, 200 replay, 409, 429, 400, … */
    status: number;
    task: TaskInfo | null;
    error: {
        code: string;
        message: string;
    } | null;
}
export interface GetOptions {
    /** Wait until the task is terminal or this long has passed (longer than 60 s polls again). */
    waitMs?: number;
    /** Aborts the wait. */
    signal?: AbortSignal;
}
/** What a pause or a resume names: exactly one pool, tenant or workflow. */
export type FlowTarget = {
    pool: Pool;
} | {
    tenant: string;
} | {
    workflow: string;
};
/**
 * One paused target in the answer of pause and resume (and the server's
 * stats): its pool, tenant or workflow, with `refuse_submissions: true`
 * when its pause refuses submissions (absent otherwise).
 */
export type PausedTarget = FlowTarget & {
    readonly refuse_submissions?: true;
};
/** Options of a pause. */
export interface PauseOptions {
    /**
     * Also refuse the target's submissions while it is paused: each answers
     * 409 `submissions_paused` (in a batch, that item alone) and nothing is
     * written for it, so the same request is admitted after the resume.
     * Default false: submissions are admitted and wait. Sent only when true.
     */
    refuseSubmissions?: boolean;
}
/** A change of a rate limit: a number sets it, null removes it, a field left out stays as it is. */
export interface RateLimitOptions {
    /** Most starts per second, all nodes together (1–1,000,000); null removes the limit. */
    ratePerSecond?: number | null;
    /** Extra starts a one-second window may hold (0–1,000,000); null: 0. */
    burst?: number | null;
}
/** A change of a workflow's limits; a field left out stays as it is. */
export interface WorkflowLimitsOptions extends RateLimitOptions {
    /** Most running tasks of one concurrency key (from 1); null: back to the default, 1. */
    concurrencyPerKey?: number | null;
}
/** A tenant's limits as the admin API shows them. */
export interface TenantLimits {
    readonly id: string;
    readonly paused: boolean;
    /** True while the tenant's pause refuses its submissions (409 `submissions_paused`). */
    readonly refuseSubmissions: boolean;
    /** null when the tenant has no rate limit (then burst is null too). */
    readonly ratePerSecond: number | null;
    readonly burst: number | null;
    /** The in-flight limit; 0: unlimited. */
    readonly maxInFlight: number;
    readonly weight: number;
}
/** A workflow's flow control as the admin API shows it. */
export interface WorkflowLimits {
    readonly name: string;
    readonly paused: boolean;
    /** True while the workflow's pause refuses its submissions (409 `submissions_paused`). */
    readonly refuseSubmissions: boolean;
    /** null when the workflow has no rate limit (then burst is null too). */
    readonly ratePerSecond: number | null;
    readonly burst: number | null;
    readonly concurrencyPerKey: number;
}
/**
 * Calls Docket's task API with one key: submit, read, wait, cancel, retry,
 * and read a task's input, history and evidence; with an admin key, pause,
 * resume and limit what starts (flow control). Errors reject with a
 * DocketError.
 */
export declare class Client {
    private readonly transport;
    constructor(options: ClientOptions);
    /** Submits one task of a registered workflow. */
    submit(workflow: string, input: unknown, options?: SubmitOptions): Promise<SubmitResult>;
    /** Submits up to 1,000 tasks in one call; each item is answered on its own. */
    submitBatch(items: readonly SubmitBatchItem[]): Promise<SubmitBatchResult[]>;
    /**
     * Returns a task; with waitMs, once it is terminal or when waitMs has
     * passed (as it is then). When the server holds too many waits (429
     * too_many_requests) it asks again after its Retry-After, within waitMs.
     */
    get(id: string, options?: GetOptions): Promise<TaskInfo>;
    /** Cancels a queued or running task; returns it (cancelled, or its earlier terminal state). */
    cancel(id: string): Promise<TaskInfo>;
    /**
     * Queues a failed, timed_out or cancelled task again and returns it: same
     * ID, input and idempotency key, its attempt budget renewed. A task that
     * succeeded or is not terminal rejects with code `not_retryable` (409); a
     * full pool or tenant with `queue_full` or `tenant_quota_exceeded` (429,
     * with `retryAfterMs`), as a submission does.
     */
    retry(id: string): Promise<TaskInfo>;
    /** The task's input exactly as admitted (parsed JSON). */
    input<I = unknown>(id: string): Promise<I>;
    /** The task's state transitions, oldest first. */
    events(id: string): Promise<TaskEvent[]>;
    /** The evidence the task's handlers recorded. */
    evidence(id: string): Promise<Evidence[]>;
    /**
     * Pauses one pool, tenant or workflow (an admin key): nothing new of it
     * starts, on any node; running tasks finish. Submissions are still
     * admitted (queued, with `waitingOn: "paused"`), unless
     * `refuseSubmissions` is true: then they reject with code
     * `submissions_paused` (409) until the resume. A pause of what is paused
     * already sets its refusal anew (without the option, it ends it).
     * Resolves with everything paused. The refusal is said in the options
     * only: a target with a `refuse_submissions` member is a TypeError.
     */
    pause(target: FlowTarget, options?: PauseOptions): Promise<PausedTarget[]>;
    /**
     * Resumes what pause paused, refusing submissions or not; its waiting
     * tasks start in the usual order and its submissions are admitted again.
     * Resolves with what is still paused. An item of pause's answer may be
     * passed as it is (its `refuse_submissions` member is not sent).
     */
    resume(target: FlowTarget | PausedTarget): Promise<PausedTarget[]>;
    /**
     * Limits the starts of a tenant's tasks, all nodes together (an admin
     * key): in no one-second window more than `ratePerSecond + burst`. A
     * missing tenant is created.
     */
    setTenantRateLimit(tenant: string, limits: RateLimitOptions): Promise<TenantLimits>;
    /**
     * Sets a workflow's limits, built-in or remote (an admin key): the rate
     * limit on its starts across every tenant, and how many tasks of one
     * concurrency key run at once.
     */
    setWorkflowLimits(name: string, limits: WorkflowLimitsOptions): Promise<WorkflowLimits>;
    private setPaused;
    private read;
}
