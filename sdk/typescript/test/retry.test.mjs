import assert from "node:assert/strict";
import test from "node:test";
import { Backoff, RetryPolicy, sleep } from "../dist/backoff.js";
import { BatchSender } from "../dist/batch_sender.js";
import { DocketError } from "../dist/index.js";
import { HttpTransport } from "../dist/http_transport.js";
import { silentLogger } from "../dist/logger.js";
import { startFakeDocket } from "../testkit/fake_docket.mjs";

test("backoff doubles up to its cap, spread by ±50 %", () => {
  const b = new Backoff(100, 1000);
  const got = Array.from({ length: 6 }, () => b.next());
  [100, 200, 400, 800, 1000, 1000].forEach((want, i) => assert.ok(got[i] >= want * 0.5 && got[i] <= want * 1.5, `step ${i}: ${got[i]}`));
  b.reset();
  assert.ok(b.next() <= 150);
});

test("429 and 503 wait longer than network errors, and at least Retry-After", () => {
  const p = new RetryPolicy();
  const network = p.delayFor(new DocketError("network_error", "x"));
  assert.ok(network <= 150, `network ${network}`);
  const overload = p.delayFor(new DocketError("store_unavailable", "x", { status: 503 }));
  assert.ok(overload >= 500, `503 ${overload}`);
  const asked = p.delayFor(new DocketError("queue_full", "x", { status: 429, retryAfterMs: 7000 }));
  assert.ok(asked >= 7000, `Retry-After ${asked}`);
});

test("sleep ends early when its signal aborts", async () => {
  const c = new AbortController();
  const t0 = Date.now();
  setTimeout(() => c.abort(), 20);
  await sleep(10_000, c.signal);
  assert.ok(Date.now() - t0 < 1000);
});

test("a batch refused as a whole (400) is split; only the bad item rejects", async (t) => {
  const fake = await startFakeDocket();
  t.after(() => fake.close());
  // The server refuses any call that holds the poisoned item.
  fake.hooks.before = (call) => {
    if (call.body.items.some((i) => i.lease === "bad")) return { status: 400, json: { error: { code: "invalid_request", message: "", trace_id: "" } } };
    return { status: 200, json: { items: call.body.items.map((i) => ({ lease: i.lease, status: "ok" })) } };
  };
  const s = new BatchSender({
    transport: new HttpTransport({ url: fake.url, key: fake.adminKey }),
    path: "/v1/worker/finish",
    event: "finish_failed",
    logger: silentLogger,
  });
  const leases = ["a", "b", "c", "bad", "d", "e", "f"];
  const results = await Promise.allSettled(leases.map((lease) => s.send({ lease, json: JSON.stringify({ lease }) })));
  results.forEach((r, i) => {
    if (leases[i] === "bad") assert.equal(r.status === "rejected" && r.reason.code, "invalid_request");
    else assert.deepEqual(r, { status: "fulfilled", value: "ok" });
  });
  const calls = fake.callsTo("/v1/worker/finish");
  assert.equal(calls[0].body.items.length, 7, "all seven left in one call first");
  assert.ok(calls.length <= 7);
  assert.equal(await s.drain(1000), 0);
});

test("drain gives up after its timeout and counts what it abandoned", async (t) => {
  const fake = await startFakeDocket();
  t.after(() => fake.close());
  fake.hooks.before = () => "drop"; // the server never answers
  const s = new BatchSender({
    transport: new HttpTransport({ url: fake.url, key: fake.adminKey }),
    path: "/v1/worker/finish",
    event: "finish_failed",
    logger: silentLogger,
  });
  const p = s.send({ lease: "a", json: '{"lease":"a"}' });
  const t0 = Date.now();
  assert.equal(await s.drain(300), 1);
  assert.ok(Date.now() - t0 < 1000);
  await assert.rejects(p, (err) => err.code === "abandoned");
  await assert.rejects(s.send({ lease: "b", json: "{}" }), (err) => err.code === "closed");
});
