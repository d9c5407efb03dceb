// The README's example. DOCKET_URL=http://127.0.0.1:8080 DOCKET_WORKER_KEY=… node examples/worker.mjs
import { TaskFailure, Worker } from "@docket/sdk";

const worker = new Worker({ url: process.env.DOCKET_URL, key: process.env.DOCKET_WORKER_KEY, slots: 8 });

worker.handle("ts.example.greet", async (task, { signal, evidence }) => {
  const name = task.input?.name;
  if (typeof name !== "string") throw new TaskFailure("invalid_input", 'input needs a "name"', { retryable: false });
  await evidence("greeting", { length: name.length });
  signal.throwIfAborted(); // cancelled, timed out or shutting down: stop here
  return { greeting: `hello, ${name}` };
});

await worker.run({ signals: true }); // until SIGINT or SIGTERM: drains, releases, flushes
