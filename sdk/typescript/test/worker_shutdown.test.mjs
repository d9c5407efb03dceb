import assert from "node:assert/strict";
import { once } from "node:events";
import test from "node:test";
import { aborted, deferred, setup } from "../testkit/harness.mjs";

test("stop(): no more claims, heartbeats through the grace, the rest aborted with shutdown and released, outcomes flushed", { timeout: 15_000 }, async (t) => {
  const grace = 400;
  const h = await setup({ fake: { heartbeatMs: 50 } });
  t.after(() => h.close());
  const quickStarted = deferred();
  const slowStarted = deferred();
  const slowAborted = deferred();
  const stopCalled = deferred();
  const w = h.worker({ slots: 3, shutdownGraceMs: grace });
  w.handle("ts.test", async (task, { signal, evidence }) => {
    if (task.input.quick) {
      quickStarted.resolve();
      await stopCalled.promise;
      await new Promise((r) => setTimeout(r, 100));
      await evidence("note", { drained: true });
      return "drained";
    }
    slowStarted.resolve();
    slowAborted.resolve({ reason: await aborted(signal), at: Date.now() });
    return "too late";
  });
  const quick = (await h.submit({ quick: true })).id;
  const slow = (await h.submit({ quick: false })).id;
  const run = w.run();
  await Promise.all([quickStarted.promise, slowStarted.promise]);

  const stopAt = Date.now();
  const stopping = w.stop();
  assert.equal(w.stop(), stopping, "stop() is idempotent");
  stopCalled.resolve();
  await stopping;
  await run;
  const doneAt = Date.now();

  // The quick task drained within the grace: its evidence and outcome were sent before stop() resolved.
  assert.equal(h.fake.tasks.get(quick).state, "succeeded");
  assert.equal(h.fake.tasks.get(quick).result, "drained");
  assert.equal(h.fake.tasks.get(quick).evidence.length, 1);

  // The slow one was aborted with shutdown after the grace, and released.
  const { reason, at } = await slowAborted.promise;
  assert.equal(reason.code, "shutdown");
  assert.ok(at - stopAt >= grace - 5, `aborted ${at - stopAt} ms after stop() (grace ${grace})`);
  const releases = h.fake.callsTo("/v1/worker/release");
  assert.equal(releases.length, 1);
  const slowLease = h.fake.callsTo("/v1/worker/claim").flatMap((c) => c.answer?.tasks ?? []).find((x) => x.task.id === slow).lease;
  assert.deepEqual(releases[0].body.leases, [slowLease]);
  assert.deepEqual(releases[0].answer.leases, [{ lease: slowLease, status: "ok" }]);
  const s = h.fake.tasks.get(slow);
  assert.equal(s.state, "queued");
  assert.equal(s.attempt, 0, "the attempt is not charged: the next claim counts 1 again");
  assert.deepEqual(
    s.events.slice(-1).map((e) => [e.from, e.to, e.code]),
    [["running", "queued", "shutdown"]],
  );

  // Heartbeats went on during the grace; no claim was sent after stop().
  const beatsInGrace = h.fake.callsTo("/v1/worker/heartbeat").filter((c) => c.at > stopAt + 50 && c.at < releases[0].at);
  assert.ok(beatsInGrace.length >= 2, `${beatsInGrace.length} heartbeats during the grace`);
  assert.equal(h.fake.callsTo("/v1/worker/claim").filter((c) => c.at > stopAt).length, 0);
  assert.ok(h.fake.calls.every((c) => c.at <= doneAt), "nothing is sent after stop() resolves");
  assert.equal(w.stats().released, 1);
  assert.equal(w.stats().dropped, 1);
});

test("stop() waits for an outcome that needs a retry", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  let drops = 0;
  h.fake.hooks.before = (call) => {
    if (call.path === "/v1/worker/finish" && drops++ < 2) return "drop";
  };
  const returned = deferred();
  const w = h.worker();
  w.handle("ts.test", () => {
    setImmediate(returned.resolve);
    return "kept";
  });
  const id = (await h.submit()).id;
  const run = w.run();
  await returned.promise;
  await w.stop();
  await run;
  assert.equal(drops, 3, "two lost calls, then the one that went through");
  assert.equal(h.fake.tasks.get(id).state, "succeeded", "flushed before stop() resolved");
  assert.equal(h.fake.tasks.get(id).result, "kept");
});

test("stop() with nothing running resolves promptly and releases nothing", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const w = h.worker({ shutdownGraceMs: 5000 });
  w.handle("ts.test", () => null);
  const polling = once(h.fake, "claim_wait");
  const run = w.run();
  await polling;
  const t0 = Date.now();
  await w.stop();
  await run;
  assert.ok(Date.now() - t0 < 500, `stop() took ${Date.now() - t0} ms`);
  assert.equal(h.fake.callsTo("/v1/worker/release").length, 0);
});
