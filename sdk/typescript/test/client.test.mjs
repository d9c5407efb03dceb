import assert from "node:assert/strict";
import test from "node:test";
import { Client, DocketError } from "../dist/index.js";
import { setup } from "../testkit/harness.mjs";

test("submit sends the idempotency key; the same key and body replay the task, another body is 409", async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const a = await h.client.submit("ts.test", { n: 1 }, { idempotencyKey: "order-1", timeoutMs: 5000, maxAttempts: 2, priority: 3 });
  assert.equal(a.replayed, false);
  assert.equal(a.task.state, "queued");
  assert.equal(a.task.maxAttempts, 2);
  assert.ok(a.task.deadlineAt instanceof Date && a.task.createdAt instanceof Date);
  const call = h.fake.callsTo("/v1/tasks")[0];
  assert.deepEqual(call.body, { workflow: "ts.test", input: { n: 1 }, timeout_ms: 5000, priority: 3, max_attempts: 2 });
  const b = await h.client.submit("ts.test", { n: 1 }, { idempotencyKey: "order-1", timeoutMs: 5000, maxAttempts: 2, priority: 3 });
  assert.equal(b.replayed, true);
  assert.equal(b.task.id, a.task.id);
  await assert.rejects(
    h.client.submit("ts.test", { n: 2 }, { idempotencyKey: "order-1" }),
    (err) => err instanceof DocketError && err.code === "idempotency_conflict" && err.status === 409 && err.traceId === "fake",
  );
  // Without a key, each call makes a task.
  const c = await h.client.submit("ts.test", { n: 1 });
  const d = await h.client.submit("ts.test", { n: 1 });
  assert.notEqual(c.task.id, d.task.id);
});

test("submitBatch answers each item; get waits for the end; cancel, events and evidence", async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const results = await h.client.submitBatch([
    { workflow: "ts.test", input: { i: 0 }, idempotencyKey: "b0" },
    { workflow: "ts.nope", input: {}, idempotencyKey: "b1" },
    { workflow: "ts.test", input: { i: 2 }, idempotencyKey: "b2", runAt: new Date(Date.now() + 60_000) },
  ]);
  assert.deepEqual(results.map((r) => r.status), [201, 400, 201]);
  assert.equal(results[1].error.code, "unknown_workflow");
  assert.equal(results[1].task, null);
  assert.ok(results[2].task.runAt instanceof Date);
  const id = results[0].task.id;

  const t0 = Date.now();
  const waited = await h.client.get(id, { waitMs: 200 });
  assert.equal(waited.state, "queued");
  assert.ok(Date.now() - t0 >= 150, "the server held the answer");
  assert.match(h.fake.callsTo(`/v1/tasks/${id}`)[0].method, /GET/);

  const cancelled = await h.client.cancel(id);
  assert.equal(cancelled.state, "cancelled");
  assert.equal((await h.client.get(id, { waitMs: 5000 })).state, "cancelled");
  const events = await h.client.events(id);
  assert.deepEqual(events.map((e) => [e.from, e.to]), [[null, "queued"], ["queued", "cancelled"]]);
  assert.ok(events[0].at instanceof Date);
  assert.deepEqual(await h.client.evidence(id), []);
  await assert.rejects(h.client.get("tsk_missing"), (err) => err.code === "not_found" && err.status === 404);
  await assert.rejects(h.client.submitBatch([]), RangeError);
});

test("errors carry code, status and Retry-After; no answer is network_error", async (t) => {
  const h = await setup();
  t.after(() => h.close());
  h.fake.hooks.before = (call) =>
    call.path === "/v1/tasks"
      ? { status: 429, json: { error: { code: "queue_full", message: "full", trace_id: "t1" } }, headers: { "retry-after": "3" } }
      : undefined;
  await assert.rejects(h.client.submit("ts.test", {}), (err) => {
    assert.ok(err instanceof DocketError);
    assert.equal(err.code, "queue_full");
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterMs, 3000);
    assert.equal(err.transient, true);
    assert.equal(err.overloaded, true);
    return true;
  });
  const bad = new Client({ url: h.fake.url, key: "wrong" });
  await assert.rejects(bad.get("x"), (err) => err.code === "unauthenticated" && err.status === 401 && !err.transient);
  const closed = new Client({ url: "http://127.0.0.1:1", key: "k" });
  await assert.rejects(closed.get("x"), (err) => err instanceof DocketError && err.code === "network_error" && err.status === 0);
});

test("get with a wait asks again after a 429 too_many_requests", async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const id = (await h.submit()).id;
  let refused = 0;
  h.fake.hooks.before = (call) => {
    if (call.path.startsWith("/v1/tasks/") && refused === 0) {
      refused++;
      return { status: 429, json: { error: { code: "too_many_requests", message: "", trace_id: "" } }, headers: { "retry-after": "0" } };
    }
  };
  setTimeout(() => h.fake.cancel(h.fake.tasks.get(id)), 300);
  const got = await h.client.get(id, { waitMs: 5000 });
  assert.equal(refused, 1);
  assert.equal(got.state, "cancelled");
});

test("retry queues a terminal task again (409 not_retryable otherwise, 429 as a submission); input reads what was admitted", async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const task = await h.submit({ text: "héllo", n: [1, 2.5] });
  assert.deepEqual(await h.client.input(task.id), { text: "héllo", n: [1, 2.5] });
  await assert.rejects(h.client.retry(task.id), (err) => err instanceof DocketError && err.code === "not_retryable" && err.status === 409);
  await h.client.cancel(task.id);
  const again = await h.client.retry(task.id);
  assert.deepEqual([again.id, again.state, again.error], [task.id, "queued", null]);
  const last = (await h.client.events(task.id)).at(-1);
  assert.deepEqual([last.from, last.to, last.code], ["cancelled", "queued", "retried"]);
  const call = h.fake.callsTo(`/v1/tasks/${task.id}/retry`).at(-1);
  assert.deepEqual([call.method, call.body], ["POST", undefined]);

  h.fake.hooks.before = (c) =>
    c.path.endsWith("/retry")
      ? { status: 429, json: { error: { code: "tenant_quota_exceeded", message: "full" } }, headers: { "retry-after": "2" } }
      : undefined;
  await assert.rejects(h.client.retry(task.id), (err) => {
    assert.ok(err instanceof DocketError);
    assert.deepEqual([err.code, err.status, err.retryAfterMs, err.overloaded], ["tenant_quota_exceeded", 429, 2000, true]);
    return true;
  });
  await assert.rejects(h.client.input("tsk_missing"), (err) => err.code === "not_found" && err.status === 404);
});

test("pause and resume name exactly one pool, tenant or workflow, and answer what is paused", async (t) => {
  const h = await setup();
  t.after(() => h.close());
  assert.deepEqual(await h.client.pause({ workflow: "ts.test" }), [{ workflow: "ts.test" }]);
  assert.deepEqual(await h.client.pause({ tenant: "acme" }), [{ workflow: "ts.test" }, { tenant: "acme" }]);
  assert.deepEqual(await h.client.resume({ workflow: "ts.test" }), [{ tenant: "acme" }]);
  assert.deepEqual(h.fake.callsTo("/v1/admin/pause").map((c) => c.body), [{ workflow: "ts.test" }, { tenant: "acme" }]);
  assert.deepEqual(h.fake.callsTo("/v1/admin/resume")[0].body, { workflow: "ts.test" });
  for (const bad of [{}, { pool: "online", tenant: "acme" }, { queue: "x" }]) {
    await assert.rejects(h.client.pause(bad), TypeError);
  }
  assert.equal(h.fake.callsTo("/v1/admin/pause").length, 2, "a refused target is not sent");
});

test("a pause that refuses submissions: the flag is sent when asked, answered per item; submits are 409 submissions_paused, not retried", async (t) => {
  const h = await setup({ workflows: ["ts.test", "ts.other"] });
  t.after(() => h.close());
  assert.deepEqual(await h.client.pause({ tenant: "acme" }), [{ tenant: "acme" }]);
  assert.deepEqual(await h.client.pause({ workflow: "ts.test" }, { refuseSubmissions: true }), [
    { tenant: "acme" },
    { workflow: "ts.test", refuse_submissions: true },
  ]);
  assert.deepEqual(await h.client.pause({ pool: "offline" }, { refuseSubmissions: false }), [
    { tenant: "acme" },
    { workflow: "ts.test", refuse_submissions: true },
    { pool: "offline" },
  ]);
  assert.deepEqual(h.fake.callsTo("/v1/admin/pause").map((c) => c.body), [
    { tenant: "acme" },
    { workflow: "ts.test", refuse_submissions: true },
    { pool: "offline" },
  ]);
  // The refusal is said in the options, as a boolean; nothing is sent otherwise.
  await assert.rejects(h.client.pause({ workflow: "ts.test", refuse_submissions: true }), TypeError);
  await assert.rejects(h.client.pause({ workflow: "ts.test" }, { refuseSubmissions: "yes" }), TypeError);
  assert.equal(h.fake.callsTo("/v1/admin/pause").length, 3);

  // A submit of the workflow rejects once: the client does not retry a 409.
  const before = h.fake.callsTo("/v1/tasks").length;
  await assert.rejects(h.client.submit("ts.test", { n: 1 }, { idempotencyKey: "held-1" }), (err) => {
    assert.ok(err instanceof DocketError);
    assert.deepEqual([err.code, err.status, err.transient, err.overloaded, err.retryAfterMs], ["submissions_paused", 409, false, false, 0]);
    return true;
  });
  assert.equal(h.fake.callsTo("/v1/tasks").length, before + 1);
  // In a batch that item alone is refused.
  const results = await h.client.submitBatch([
    { workflow: "ts.other", input: 1, idempotencyKey: "b-ok" },
    { workflow: "ts.test", input: 2, idempotencyKey: "b-held" },
  ]);
  assert.deepEqual(results.map((r) => r.status), [201, 409]);
  assert.deepEqual([results[1].task, results[1].error.code], [null, "submissions_paused"]);
  // The limits answers say it too.
  const w = await h.client.setWorkflowLimits("ts.test", { ratePerSecond: 5 });
  assert.deepEqual([w.paused, w.refuseSubmissions], [true, true]);
  const acme = await h.client.setTenantRateLimit("acme", { ratePerSecond: 5 });
  assert.deepEqual([acme.paused, acme.refuseSubmissions], [true, false]);

  // An item of the answer resumes as it is (the flag is not sent); the
  // same request is then admitted, a new task.
  const still = await h.client.resume({ workflow: "ts.test", refuse_submissions: true });
  assert.deepEqual(still, [{ tenant: "acme" }, { pool: "offline" }]);
  assert.deepEqual(h.fake.callsTo("/v1/admin/resume").map((c) => c.body), [{ workflow: "ts.test" }]);
  const again = await h.client.submit("ts.test", { n: 1 }, { idempotencyKey: "held-1" });
  assert.deepEqual([again.replayed, again.task.state], [false, "queued"]);
  const after = await h.client.setWorkflowLimits("ts.test", { ratePerSecond: null });
  assert.deepEqual([after.paused, after.refuseSubmissions], [false, false]);
});

test("setTenantRateLimit and setWorkflowLimits send only the fields given; null removes", async (t) => {
  const h = await setup();
  t.after(() => h.close());
  assert.deepEqual(await h.client.setTenantRateLimit("acme", { ratePerSecond: 20, burst: 2 }), {
    id: "acme",
    paused: false,
    refuseSubmissions: false,
    ratePerSecond: 20,
    burst: 2,
    maxInFlight: 0,
    weight: 1,
  });
  assert.equal((await h.client.setTenantRateLimit("acme", { burst: null })).burst, 0);
  const removed = await h.client.setTenantRateLimit("acme", { ratePerSecond: null });
  assert.deepEqual([removed.ratePerSecond, removed.burst], [null, null]);
  assert.deepEqual(
    h.fake.callsTo("/v1/admin/tenants/acme").map((c) => [c.method, c.body]),
    [["PATCH", { rate_per_second: 20, burst: 2 }], ["PATCH", { burst: null }], ["PATCH", { rate_per_second: null }]],
  );

  assert.deepEqual(await h.client.setWorkflowLimits("ts.test", { concurrencyPerKey: 3 }), {
    name: "ts.test",
    paused: false,
    refuseSubmissions: false,
    ratePerSecond: null,
    burst: null,
    concurrencyPerKey: 3,
  });
  const w = await h.client.setWorkflowLimits("ts.test", { ratePerSecond: 5, concurrencyPerKey: null });
  assert.deepEqual([w.ratePerSecond, w.burst, w.concurrencyPerKey], [5, 0, 1]);
  assert.deepEqual(
    h.fake.callsTo("/v1/admin/workflows/ts.test").map((c) => c.body),
    [{ concurrency_per_key: 3 }, { rate_per_second: 5, concurrency_per_key: null }],
  );
});
