import assert from "node:assert/strict";
import test from "node:test";
import { Heartbeater } from "../dist/heartbeater.js";
import { HeldLease } from "../dist/held_lease.js";
import { HttpTransport } from "../dist/http_transport.js";
import { silentLogger } from "../dist/index.js";
import { startFakeDocket } from "../testkit/fake_docket.mjs";
import { aborted, deferred, setup } from "../testkit/harness.mjs";

test("the first heartbeat goes at once after a claim, not an interval later", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 2000 } });
  t.after(() => h.close());
  const gate = deferred();
  const w = h.worker();
  w.handle("ts.test", () => gate.promise);
  await h.submit();
  const run = w.run();
  const beat = await h.fake.waitForCall((c) => c.path === "/v1/worker/heartbeat", 5000, "a heartbeat");
  const claim = h.fake.callsTo("/v1/worker/claim").find((c) => c.answer?.tasks?.length === 1);
  assert.ok(beat.at - claim.at < 1000, `first heartbeat ${beat.at - claim.at} ms after the claim (interval 2000 ms)`);
  gate.resolve();
  await w.stop();
  await run;
});

test("one heartbeat call per interval carries every held lease", { timeout: 15_000 }, async (t) => {
  const interval = 100;
  const h = await setup({ fake: { heartbeatMs: interval } });
  t.after(() => h.close());
  const gate = deferred();
  const fiveStarted = deferred();
  let started = 0;
  const w = h.worker({ slots: 5 });
  w.handle("ts.test", async () => {
    if (++started === 5) fiveStarted.resolve();
    await gate.promise;
    return null;
  });
  for (let i = 0; i < 5; i++) await h.submit({ i });
  const run = w.run();
  await fiveStarted.promise;
  const claim = h.fake.callsTo("/v1/worker/claim").find((c) => c.answer?.tasks?.length === 5);
  assert.ok(claim, "the five tasks came in one claim");
  const leases = claim.answer.tasks.map((x) => x.lease).sort();

  const beats = () => h.fake.callsTo("/v1/worker/heartbeat");
  await h.fake.waitForCall(() => beats().length >= 6, 5000, "six heartbeats");
  const six = beats().slice(0, 6);
  for (const b of six) {
    assert.deepEqual([...b.body.leases].sort(), leases, "each call renews all five leases");
    assert.equal(b.body.worker_id, w.workerId);
  }
  // Then one call per interval: never two within one.
  for (let i = 1; i < six.length; i++) {
    const gap = six[i].at - six[i - 1].at;
    assert.ok(gap >= interval * 0.8, `heartbeat gap ${gap} ms with a ${interval} ms interval`);
  }
  gate.resolve();
  await w.stop();
  await run;
  assert.equal(w.stats().succeeded, 5);
});

test("heartbeats stop when nothing is held", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 20 } });
  t.after(() => h.close());
  const w = h.worker();
  w.handle("ts.test", () => null);
  const run = w.run();
  const id = (await h.submit()).id;
  await h.client.get(id, { waitMs: 5000 });
  await h.fake.waitForCall((c) => c.path === "/v1/worker/finish" && c.status === 200);
  while (w.stats().held > 0) await new Promise((r) => setImmediate(r));
  const before = h.fake.callsTo("/v1/worker/heartbeat").length;
  // Absence needs a window: seven intervals.
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(h.fake.callsTo("/v1/worker/heartbeat").length, before, "no heartbeat without a lease");
  await w.stop();
  await run;
});

test("a lease not renewed within the TTL is lost: the handler aborts with lease_lost", { timeout: 10_000 }, async (t) => {
  // One attempt: the server's recovery then fails the task rather than queue it again.
  const h = await setup({ fake: { heartbeatMs: 50, leaseTtlMs: 400 }, workflowSpec: { max_attempts: 1 } });
  t.after(() => h.close());
  // The server cannot be reached for heartbeats.
  h.fake.hooks.before = (call) => (call.path === "/v1/worker/heartbeat" ? "drop" : undefined);
  const reason = deferred();
  const w = h.worker();
  w.handle("ts.test", async (_task, { signal }) => {
    reason.resolve(await aborted(signal));
    return "late";
  });
  const id = (await h.submit()).id;
  const run = w.run();
  const t0 = Date.now();
  const r = await reason.promise;
  assert.equal(r.code, "lease_lost");
  assert.ok(Date.now() - t0 >= 300, "not before the TTL");
  await w.stop();
  await run;
  assert.equal(w.stats().dropped, 1);
  assert.equal(w.stats().aborted.lease_lost, 1);
  assert.ok(!h.fake.callsTo("/v1/worker/finish").some((c) => c.body.items.length > 0), "the late result is not sent");
  const after = await h.fake.waitForTask(id, (x) => x.state !== "running");
  assert.equal(after.state, "failed");
  assert.equal(after.error.code, "lease_lost");
});

test("a stream of small claims does not flood heartbeats: at most four calls per interval", { timeout: 20_000 }, async (t) => {
  const interval = 400;
  const fake = await startFakeDocket();
  t.after(() => fake.close());
  fake.hooks.before = (call) =>
    call.path === "/v1/worker/heartbeat" ? { status: 200, json: { leases: call.body.leases.map((lease) => ({ lease, status: "ok" })) } } : undefined;
  const leases = new Map();
  const hb = new Heartbeater({
    transport: new HttpTransport({ url: fake.url, key: fake.adminKey }),
    workerId: "w",
    leases,
    onLost: () => assert.fail("no lease is lost"),
    onFatal: () => assert.fail("no fatal error"),
    logger: silentLogger,
  });
  hb.setTiming(interval, 30_000);
  hb.start();
  t.after(() => hb.stop());
  // 120 claims of one task each, 10 ms apart.
  const t0 = Date.now();
  const claims = 120;
  for (let i = 0; i < claims; i++) {
    const task = { id: `t${i}`, deadlineAt: new Date(Date.now() + 60_000) };
    leases.set(`lease-${i}`, new HeldLease(`lease-${i}`, task, Infinity, Date.now()));
    hb.soon();
    await new Promise((r) => setTimeout(r, 10));
  }
  const elapsed = Date.now() - t0;
  const beats = fake.callsTo("/v1/worker/heartbeat");
  const bound = Math.ceil(elapsed / interval) * 4 + 1;
  assert.ok(claims > 2 * bound, "the test can tell a flood");
  assert.ok(beats.length <= bound, `${beats.length} heartbeats in ${elapsed} ms for ${claims} claims`);
  assert.ok(beats.length >= Math.floor(elapsed / interval), "and still at least one per interval");
  assert.equal(beats.at(-1).body.leases.length >= claims - 10, true, "each call carries every lease held");
  await hb.stop();
});
