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
