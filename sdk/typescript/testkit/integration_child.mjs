// A worker process for the integration test that kills it: it claims one
// task of DOCKET_WORKFLOW, prints "started <task id> <attempt>" and then
// holds the task until it is killed.
import { Worker } from "../dist/index.js";

const worker = new Worker({ url: process.env.DOCKET_URL, key: process.env.DOCKET_WORKER_KEY, slots: 1, waitMs: 1000 });
worker.handle(process.env.DOCKET_WORKFLOW, (task, { signal }) => {
  process.stdout.write(`started ${task.id} ${task.attempt}\n`);
  return new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
});
await worker.run();
