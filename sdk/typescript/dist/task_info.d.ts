import type { Pool, TaskState, WireTask } from "./task.js";
/** A task as the client API returns it. */
export interface TaskInfo {
    readonly id: string;
    readonly tenant: string;
    readonly author: string;
    readonly workflow: string;
    readonly pool: Pool;
    readonly state: TaskState;
    readonly attempt: number;
    readonly maxAttempts: number;
    readonly priority: number;
    readonly createdAt: Date | null;
    readonly runAt: Date | null;
    readonly startedAt: Date | null;
    readonly finishedAt: Date | null;
    readonly deadlineAt: Date;
    readonly traceId: string;
    readonly configVersion: string;
    /** The handler's result (JSON), once `succeeded`; otherwise null. */
    readonly result: unknown;
    readonly error: {
        readonly code: string;
        readonly message: string;
    } | null;
    /** Why a queued task waits (`run_at`, `rate_limit`, …), or null. */
    readonly waitingOn: string | null;
}
/** One state transition of a task's history. */
export interface TaskEvent {
    readonly id: number;
    readonly taskId: string;
    /** null for the admission event. */
    readonly from: TaskState | null;
    readonly to: TaskState;
    readonly epoch: number;
    /** Why (`shutdown`, `lease_lost`, `cancelled`, …), or null. */
    readonly code: string | null;
    readonly at: Date;
}
/** One evidence item a handler recorded. */
export interface Evidence {
    readonly id: number;
    readonly taskId: string;
    readonly attempt: number;
    readonly epoch: number;
    readonly kind: string;
    readonly body: unknown;
    readonly createdAt: Date;
}
/** The terminal states: a task in one of them never changes again (short of a retry). */
export declare const TERMINAL_STATES: readonly TaskState[];
/** True when state is terminal. */
export declare function isTerminal(state: TaskState): boolean;
export declare function taskInfoFromWire(w: WireTask): TaskInfo;
export interface WireEvent {
    id: number;
    task_id: string;
    from?: TaskState | "";
    to: TaskState;
    epoch: number;
    code?: string;
    at: string;
}
export declare function taskEventFromWire(w: WireEvent): TaskEvent;
export interface WireEvidence {
    id: number;
    task_id: string;
    attempt: number;
    epoch: number;
    kind: string;
    body: unknown;
    created_at: string;
}
export declare function evidenceFromWire(w: WireEvidence): Evidence;
