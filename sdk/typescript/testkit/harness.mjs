// Shared setup of the unit tests: a fake server, a worker key, a client,
// and workers that are always stopped at the end of the test.

import { Client, silentLogger, Worker } from "../dist/index.js";
import { startFakeDocket } from "./fake_docket.mjs";

/** A promise with its resolve and reject. */
export function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves when signal aborts (at once if it has). */
export function aborted(signal) {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true }));
}

/**
 * Starts a fake server with workflow(s) registered and returns helpers.
 * Call `await h.close()` in t.after (it stops workers, then the server).
 */
export async function setup(options = {}) {
  const fake = await startFakeDocket({ heartbeatMs: 1000, ...options.fake });
  for (const name of options.workflows ?? ["ts.test"]) fake.registerWorkflow(name, options.workflowSpec ?? {});
  const workerKey = fake.makeKey({ tenant: "demo", principal: "ts-sdk", role: "worker" }).key;
  const client = new Client({ url: fake.url, key: fake.adminKey });
  const workers = [];
  return {
    fake,
    client,
    workerKey,
    /** A Worker on the fake, silent unless logger is given. */
    worker(opts = {}) {
      const w = new Worker({ url: fake.url, key: workerKey, slots: 4, waitMs: 1000, logger: silentLogger, ...opts });
      workers.push(w);
      return w;
    },
    /** Submits one task of workflow (default the first registered). */
    async submit(input = {}, opts = {}, workflow = (options.workflows ?? ["ts.test"])[0]) {
      return (await client.submit(workflow, input, opts)).task;
    },
    async close() {
      await Promise.all(workers.map((w) => w.stop()));
      await fake.close();
    },
  };
}

/** Finish items (lease, outcome, …) the fake received, in order. */
export function finishItems(fake) {
  return fake.callsTo("/v1/worker/finish").flatMap((c) => c.body?.items ?? []);
}

/** Resolves once every task of ids is terminal on the fake (event-driven). */
export function allTerminal(fake, ids, timeoutMs = 10_000) {
  const TERMINAL = new Set(["succeeded", "failed", "cancelled", "timed_out"]);
  const left = new Set(ids.filter((id) => !TERMINAL.has(fake.tasks.get(id)?.state)));
  if (left.size === 0) return Promise.resolve();
  return fake
    .waitForEvent(
      "task",
      (t) => {
        if (TERMINAL.has(t.state)) left.delete(t.id);
        return left.size === 0;
      },
      timeoutMs,
      `${left.size} terminal tasks`,
    )
    .then(() => undefined);
}
