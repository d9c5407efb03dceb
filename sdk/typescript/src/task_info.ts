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
  readonly error: { readonly code: string; readonly message: string } | null;
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
export const TERMINAL_STATES: readonly TaskState[] = Object.freeze(["succeeded", "failed", "cancelled", "timed_out"]);

/** True when state is terminal. */
export function isTerminal(state: TaskState): boolean {
  return TERMINAL_STATES.includes(state);
}

function dateOrNull(v: string | null | undefined): Date | null {
  return v ? new Date(v) : null;
}

export function taskInfoFromWire(w: WireTask): TaskInfo {
  return {
    id: w.id,
    tenant: w.tenant,
    author: w.author,
    workflow: w.workflow,
    pool: w.pool,
    state: w.state,
    attempt: w.attempt,
    maxAttempts: w.max_attempts,
    priority: w.priority ?? 0,
    createdAt: dateOrNull(w.created_at),
    runAt: dateOrNull(w.run_at),
    startedAt: dateOrNull(w.started_at),
    finishedAt: dateOrNull(w.finished_at),
    deadlineAt: new Date(w.deadline_at),
    traceId: w.trace_id ?? "",
    configVersion: w.config_version ?? "",
    result: w.result ?? null,
    error: w.error ? { code: w.error.code, message: w.error.message ?? "" } : null,
    waitingOn: w.waiting_on ?? null,
  };
}

export interface WireEvent {
  id: number;
  task_id: string;
  from?: TaskState | "";
  to: TaskState;
  epoch: number;
  code?: string;
  at: string;
}

export function taskEventFromWire(w: WireEvent): TaskEvent {
  return {
    id: w.id,
    taskId: w.task_id,
    from: w.from ? w.from : null,
    to: w.to,
    epoch: w.epoch,
    code: w.code ? w.code : null,
    at: new Date(w.at),
  };
}

export interface WireEvidence {
  id: number;
  task_id: string;
  attempt: number;
  epoch: number;
  kind: string;
  body: unknown;
  created_at: string;
}

export function evidenceFromWire(w: WireEvidence): Evidence {
  return {
    id: w.id,
    taskId: w.task_id,
    attempt: w.attempt,
    epoch: w.epoch,
    kind: w.kind,
    body: w.body ?? null,
    createdAt: new Date(w.created_at),
  };
}
