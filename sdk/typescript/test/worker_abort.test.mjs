import assert from "node:assert/strict";
import test from "node:test";
import { TaskAbortedError } from "../dist/index.js";
import { aborted, deferred, finishItems, setup } from "../testkit/harness.mjs";

/** A handler that reports its start and its abort, then returns a result anyway. */
function stubborn() {
  const started = deferred();
  const abortedWith = deferred();
  const returned = deferred();
  const handler = async (task, { signal }) => {
    started.resolve(task);
    const reason = await aborted(signal);
    abortedWith.resolve({ reason, at: Date.now() });
    setImmediate(returned.resolve);
    return { late: true };
  };
  return { handler, started, abortedWith, returned };
}

/** Waits until the worker has dealt with what the handler returned. */
async function settled(w) {
  while (w.stats().running > 0) await new Promise((r) => setImmediate(r));
}

test("a cancel reaches the handler's signal through the heartbeat, and its result is dropped", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 50 } });
  t.after(() => h.close());
  const s = stubborn();
  const w = h.worker();
  w.handle("ts.test", s.handler);
  const id = (await h.submit()).id;
  const run = w.run();
  const task = await s.started.promise;
  assert.equal(task.id, id);
  const t0 = Date.now();
  const cancelled = await h.client.cancel(id);
  assert.equal(cancelled.state, "cancelled");
  const { reason, at } = await s.abortedWith.promise;
  assert.ok(reason instanceof TaskAbortedError);
  assert.equal(reason.code, "cancelled");
  assert.ok(at - t0 < 500, `the abort came ${at - t0} ms after the cancel (interval 50 ms)`);
  await s.returned.promise;
  await settled(w);
  await w.stop();
  await run;
  assert.equal(finishItems(h.fake).length, 0, "no finish is sent for a cancelled task");
  assert.equal(w.stats().dropped, 1);
  assert.equal(w.stats().aborted.cancelled, 1);
  assert.equal(h.fake.tasks.get(id).state, "cancelled");
});

test("a heartbeat answering lease_lost aborts the handler, and its result is dropped", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 50 } });
  t.after(() => h.close());
  const s = stubborn();
  const w = h.worker();
  w.handle("ts.test", s.handler);
  const id = (await h.submit()).id;
  const run = w.run();
  await s.started.promise;
  // From now on the server says the lease is not current any more.
  h.fake.hooks.after = (call, answer) => {
    if (call.path !== "/v1/worker/heartbeat") return;
    return { status: 200, json: { leases: answer.json.leases.map((l) => ({ lease: l.lease, status: "lease_lost" })) } };
  };
  const { reason } = await s.abortedWith.promise;
  assert.equal(reason.code, "lease_lost");
  await s.returned.promise;
  await settled(w);
  await w.stop();
  await run;
  assert.equal(finishItems(h.fake).length, 0, "no finish after lease_lost");
  assert.equal(w.stats().dropped, 1);
  assert.equal(h.fake.tasks.get(id).state, "running", "the worker wrote nothing");
});

test("the local deadline aborts the handler with timed_out before any heartbeat says so", { timeout: 10_000 }, async (t) => {
  // Heartbeats every 10 s: only the local timer can abort within a second.
  const h = await setup({ fake: { heartbeatMs: 10_000 } });
  t.after(() => h.close());
  const s = stubborn();
  const w = h.worker();
  w.handle("ts.test", s.handler);
  const id = (await h.submit({}, { timeoutMs: 300 })).id;
  const run = w.run();
  const task = await s.started.promise;
  assert.ok(task.deadlineAt instanceof Date);
  const { reason, at } = await s.abortedWith.promise;
  assert.equal(reason.code, "timed_out");
  const early = task.deadlineAt.getTime() - at;
  assert.ok(early <= 20, `aborted ${early} ms before the deadline`);
  assert.ok(at - task.deadlineAt.getTime() < 500, "aborted soon after the deadline");
  assert.equal(h.fake.callsTo("/v1/worker/heartbeat").length, 1, "only the first heartbeat went");
  await s.returned.promise;
  await settled(w);
  await w.stop();
  await run;
  assert.equal(finishItems(h.fake).length, 0);
  assert.equal(w.stats().aborted.timed_out, 1);
  // The server's own deadline ends the task: its timer fires at the same
  // instant as the worker's, in either order.
  for (const end = Date.now() + 2_000; h.fake.tasks.get(id).state !== "timed_out" && Date.now() < end; ) {
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.equal(h.fake.tasks.get(id).state, "timed_out");
});

test("a heartbeat answering timed_out aborts with timed_out", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 50 } });
  t.after(() => h.close());
  const s = stubborn();
  const w = h.worker();
  w.handle("ts.test", s.handler);
  const id = (await h.submit()).id;
  const run = w.run();
  await s.started.promise;
  h.fake.deadline(h.fake.tasks.get(id)); // the server's deadline scheduler fires
  const { reason } = await s.abortedWith.promise;
  assert.equal(reason.code, "timed_out");
  await s.returned.promise;
  await settled(w);
  await w.stop();
  await run;
  assert.equal(finishItems(h.fake).length, 0);
});

test("evidence after the lease is gone rejects with the abort reason", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 50 } });
  t.after(() => h.close());
  const outcome = deferred();
  const started = deferred();
  const w = h.worker();
  w.handle("ts.test", async (task, ctx) => {
    started.resolve();
    await aborted(ctx.signal);
    try {
      await ctx.evidence("note", { n: 1 });
      outcome.resolve("stored");
    } catch (err) {
      outcome.resolve(err);
    }
    return null;
  });
  const id = (await h.submit()).id;
  const run = w.run();
  await started.promise;
  await h.client.cancel(id);
  const err = await outcome.promise;
  assert.ok(err instanceof TaskAbortedError && err.code === "cancelled");
  assert.equal(h.fake.callsTo("/v1/worker/evidence").length, 0);
  await w.stop();
  await run;
});
