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
export { Client } from "./client.js";
export { DocketError } from "./docket_error.js";
export { TaskFailure } from "./task_failure.js";
export { TaskAbortedError } from "./task_aborted_error.js";
export { isTerminal, TERMINAL_STATES } from "./task_info.js";
export { consoleLogger, errorsLogger, silentLogger } from "./logger.js";
export { VERSION } from "./version.js";
