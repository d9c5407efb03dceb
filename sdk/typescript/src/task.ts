/** A worker pool of the server. */
export type Pool = "online" | "offline";

/** A task's state; the last four are terminal. */
export type TaskState = "queued" | "running" | "succeeded" | "failed" | "cancelled" | "timed_out";

/**
 * A claimed task as its handler sees it: the binding the server made at
 * claim time, and the input exactly as admitted. Nothing here comes from
 * the submitting client except `input`.
 */
export interface Task<I = unknown> {
  readonly id: string;
  readonly tenant: string;
  /** The principal that submitted the task (server-owned). */
  readonly author: string;
  readonly workflow: string;
  readonly pool: Pool;
  /** 1 for the first run, then one more for each retry or recovery. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** When the server times the task out; the worker aborts the handler then. */
  readonly deadlineAt: Date;
  readonly traceId: string;
  /** The configuration (rule set) version the task was admitted with. */
  readonly configVersion: string;
  /**
   * The W3C traceparent of the task's span in its trace ("" when the server
   * sent none): a handler that traces makes its span of the attempt a child
   * of it (e.g. with OpenTelemetry's W3CTraceContextPropagator), so that the
   * attempt joins the trace of the request that submitted the task.
   */
  readonly traceparent: string;
  readonly input: I;
}

/** The wire shape of a task object (the parts the SDK reads). */
export interface WireTask {
  id: string;
  tenant: string;
  author: string;
  workflow: string;
  pool: Pool;
  state: TaskState;
  attempt: number;
  max_attempts: number;
  priority?: number;
  created_at?: string;
  run_at?: string | null;
  started_at?: string | null;
  finished_at?: string | null;
  deadline_at: string;
  trace_id?: string;
  config_version?: string;
  result?: unknown;
  error?: { code: string; message?: string } | null;
  waiting_on?: string | null;
}

/** The Task of a claimed task object, its input and traceparent. */
export function taskFromClaim<I>(w: WireTask, input: I, traceparent = ""): Task<I> {
  return Object.freeze({
    id: w.id,
    tenant: w.tenant,
    author: w.author,
    workflow: w.workflow,
    pool: w.pool,
    attempt: w.attempt,
    maxAttempts: w.max_attempts,
    deadlineAt: new Date(w.deadline_at),
    traceId: w.trace_id ?? "",
    configVersion: w.config_version ?? "",
    traceparent: typeof traceparent === "string" ? traceparent : "",
    input,
  });
}
