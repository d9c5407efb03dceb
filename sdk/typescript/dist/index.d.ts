/**
 * Docket's TypeScript SDK: a remote Worker that runs tasks of registered
 * workflows over the worker protocol (docs/worker-protocol.md), and a small
 * Client of the task API. Node 20, no runtime dependency.
 *
 * ```ts
 * import { Worker } from "@docket/sdk";
 *
 * const worker = new Worker({ url: "http://127.0.0.1:8080", key: process.env.DOCKET_WORKER_KEY!, slots: 8 });
 * worker.handle("images.resize", async (task, { signal }) => ({ ok: true }));
 * await worker.run({ signals: true });
 * ```
 */
export { Worker } from "./worker.js";
export type { WorkerOptions, Handler, TaskContext, RunOptions, WorkerStats, DependencyResult } from "./worker.js";
export { Client } from "./client.js";
export type { ClientOptions, SubmitOptions, SubmitResult, SubmitBatchItem, SubmitBatchResult, GetOptions, FlowTarget, PausedTarget, PauseOptions, RateLimitOptions, WorkflowLimitsOptions, TenantLimits, WorkflowLimits, } from "./client.js";
export { DocketError } from "./docket_error.js";
export { TaskFailure } from "./task_failure.js";
export { TaskAbortedError } from "./task_aborted_error.js";
export type { AbortCode } from "./task_aborted_error.js";
export type { Task, Pool, TaskState } from "./task.js";
export type { TaskInfo, TaskEvent, Evidence } from "./task_info.js";
export { isTerminal, TERMINAL_STATES } from "./task_info.js";
export { consoleLogger, errorsLogger, silentLogger } from "./logger.js";
export type { Logger, LogFields } from "./logger.js";
export type { FetchFunction } from "./http_transport.js";
export { VERSION } from "./version.js";
