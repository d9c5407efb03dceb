import assert from "node:assert/strict";
import { once } from "node:events";
import test from "node:test";
import { DocketError, Worker, silentLogger } from "../dist/index.js";
import { deferred, setup } from "../testkit/harness.mjs";

test("claims ask only for free slots, and never run more handlers than slots", { timeout: 15_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 30 } });
  t.after(() => h.close());
  const gates = [];
  const threeStarted = deferred();
  let running = 0;
  let most = 0;
  const w = h.worker({ slots: 3 });
  w.handle("ts.test", async (task) => {
    running++;
    most = Math.max(most, running);
    const gate = deferred();
    gates.push(gate);
    if (gates.length === 3) threeStarted.resolve();
    await gate.promise;
    running--;
    return task.input.n;
  });
  const ids = [];
  for (let n = 0; n < 7; n++) ids.push((await h.submit({ n })).id);
  const run = w.run();

  await threeStarted.promise;
  const first = h.fake.callsTo("/v1/worker/claim")[0];
  assert.equal(first.body.max, 3);
  assert.equal(first.answer.tasks.length, 3);
  assert.equal(first.body.slots, 3);
  assert.equal(first.body.wait_ms, 1000);
  assert.equal(first.body.worker_id, w.workerId);
  assert.match(first.body.sdk, /^typescript\/\d+\.\d+\.\d+$/);
  assert.equal(w.stats().running, 3);
  // While every slot is busy the worker only heartbeats: let a few beats pass.
  await h.fake.waitForCall((c) => c.path === "/v1/worker/heartbeat" && h.fake.callsTo("/v1/worker/heartbeat").length >= 4);
  assert.equal(h.fake.callsTo("/v1/worker/claim").length, 1, "no claim while every slot is busy");

  // One returns: the next claim asks for exactly one.
  gates[0].resolve();
  const next = await h.fake.waitForCall((c) => c.path === "/v1/worker/claim" && c !== first);
  assert.equal(next.body.max, 1);

  // Let everything run out.
  const timer = setInterval(() => gates.forEach((g) => g.resolve()), 5);
  t.after(() => clearInterval(timer));
  for (const id of ids) await h.client.get(id, { waitMs: 5000 });
  for (const c of h.fake.callsTo("/v1/worker/claim")) assert.ok(c.body.max >= 1 && c.body.max <= 3, `claim max ${c.body.max}`);
  assert.ok(most <= 3, `at most 3 handlers at once, saw ${most}`);
  for (const id of ids) assert.equal(h.fake.tasks.get(id).state, "succeeded");
  await w.stop();
  await run;
});

test("an idle worker long-polls, and stop() ends the poll at once", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const w = h.worker({ waitMs: 20_000 });
  w.handle("ts.test", () => null);
  const polling = once(h.fake, "claim_wait");
  const run = w.run();
  await polling;
  const t0 = Date.now();
  await w.stop();
  await run;
  assert.ok(Date.now() - t0 < 1000, `stop took ${Date.now() - t0} ms with a 20 s poll out`);
});

test("a claim that got no answer is tried again, and the task runs", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  let drops = 0;
  h.fake.hooks.before = (call) => {
    if (call.path === "/v1/worker/claim" && drops < 2) {
      drops++;
      return "drop";
    }
  };
  const w = h.worker();
  w.handle("ts.test", () => "done");
  const id = (await h.submit()).id;
  const run = w.run();
  const task = await h.client.get(id, { waitMs: 5000 });
  assert.equal(task.state, "succeeded");
  assert.equal(task.result, "done");
  assert.equal(drops, 2);
  await w.stop();
  await run;
});

test("run() rejects when the server refuses the key (a member key cannot claim)", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const w = new Worker({ url: h.fake.url, key: h.fake.adminKey, slots: 1, logger: silentLogger });
  w.handle("ts.test", () => null);
  await assert.rejects(w.run(), (err) => err instanceof DocketError && err.code === "forbidden" && err.status === 403);
});

test("run() rejects when a workflow is not registered", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const w = h.worker();
  w.handle("ts.not.registered", () => null);
  await assert.rejects(w.run(), (err) => err instanceof DocketError && err.code === "unknown_workflow");
});

test("options are checked", () => {
  const base = { url: "http://127.0.0.1:1", key: "k" };
  assert.throws(() => new Worker({ ...base, slots: 0 }), RangeError);
  assert.throws(() => new Worker({ ...base, slots: 1, waitMs: 60_001 }), RangeError);
  assert.throws(() => new Worker({ ...base, slots: 1, workerId: "has space" }), RangeError);
  assert.throws(() => new Worker({ ...base, key: "", slots: 1 }), TypeError);
  const w = new Worker({ ...base, slots: 1 });
  w.handle("a.b", () => null);
  assert.throws(() => w.handle("a.b", () => null), /already has a handler/);
  assert.match(w.workerId, /^[\x21-\x7e]+\/pid-\d+$/);
});

test("stop() before run() makes run() return at once", async () => {
  const w = new Worker({ url: "http://127.0.0.1:1", key: "k", slots: 1 });
  w.handle("a.b", () => null);
  await w.stop();
  await w.run();
});
