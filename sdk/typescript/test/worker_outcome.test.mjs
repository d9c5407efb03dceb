import assert from "node:assert/strict";
import test from "node:test";
import { TaskFailure } from "../dist/index.js";
import { allTerminal, deferred, finishItems, setup } from "../testkit/harness.mjs";

async function runUntilDone(h, w, ids) {
  const run = w.run();
  const tasks = [];
  for (const id of ids) tasks.push(await h.client.get(id, { waitMs: 5000 }));
  await w.stop();
  await run;
  return tasks;
}

test("TaskFailure fails with its code; any other error fails retryable as workflow_error with only its name", { timeout: 10_000 }, async (t) => {
  const h = await setup({ workflowSpec: { max_attempts: 1 } });
  t.after(() => h.close());
  const w = h.worker();
  w.handle("ts.test", async (task) => {
    switch (task.input.kind) {
      case "failure":
        throw new TaskFailure("bad_input", "input needs an x", { retryable: false });
      case "retryable":
        throw new TaskFailure("flaky_upstream", "try again");
      case "bad_code":
        throw new TaskFailure("Not-Snake", "odd code", { retryable: false });
      case "long":
        throw new TaskFailure("too_long", "é".repeat(2000), { retryable: false });
      case "error":
        throw new RangeError(`secret ${task.input.secret}`);
      case "string":
        throw "secret string";
      case "bigint":
        return { n: 10n };
      case "undefined":
        return undefined;
    }
  });
  const kinds = ["failure", "retryable", "bad_code", "long", "error", "string", "bigint", "undefined"];
  const ids = [];
  for (const kind of kinds) ids.push((await h.submit({ kind, secret: "s3cr3t" })).id);
  const tasks = await runUntilDone(h, w, ids);
  const byKind = Object.fromEntries(kinds.map((k, i) => [k, tasks[i]]));
  const items = finishItems(h.fake);
  const taskOfLease = new Map(h.fake.callsTo("/v1/worker/claim").flatMap((c) => c.answer.tasks.map((x) => [x.lease, x.task.id])));
  const item = (k) => items.find((it) => taskOfLease.get(it.lease) === byKind[k].id);

  assert.deepEqual(item("failure").error, { code: "bad_input", message: "input needs an x", retryable: false });
  assert.deepEqual(byKind.failure.error, { code: "bad_input", message: "input needs an x" });
  assert.equal(byKind.failure.state, "failed");
  assert.deepEqual(item("retryable").error, { code: "flaky_upstream", message: "try again", retryable: true }, "retryable by default");
  assert.equal(item("bad_code").error.code, "workflow_error");
  assert.ok(new TextEncoder().encode(item("long").error.message).length <= 1024, "the message is cut to 1,024 bytes");
  assert.ok(item("long").error.message.startsWith("éé"));
  assert.deepEqual(item("error").error, { code: "workflow_error", message: "RangeError", retryable: true });
  assert.deepEqual(item("string").error, { code: "workflow_error", message: "non-Error value (string)", retryable: true });
  assert.deepEqual(item("bigint").error, { code: "workflow_error", message: "TypeError", retryable: true }, "a result that is not JSON");
  assert.equal(item("undefined").outcome, "succeeded");
  assert.equal(item("undefined").result, null);
  assert.equal(byKind.undefined.state, "succeeded");
  assert.ok(!JSON.stringify(items).includes("s3cr3t"), "no input in any outcome");
});

test("a finish whose answer was lost is sent again and answered ok (the server had committed it)", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  let dropped = 0;
  // The fake applies the finish, then drops the connection before answering.
  h.fake.hooks.after = (call) => {
    if (call.path === "/v1/worker/finish" && dropped === 0) {
      dropped++;
      return "drop";
    }
  };
  const w = h.worker();
  w.handle("ts.test", () => ({ ok: 1 }));
  const id = (await h.submit()).id;
  const [task] = await runUntilDone(h, w, [id]);
  assert.equal(task.state, "succeeded");
  assert.deepEqual(task.result, { ok: 1 });
  const calls = h.fake.callsTo("/v1/worker/finish");
  assert.equal(calls.length, 2);
  assert.equal(calls[0].status, -1, "the first got no answer");
  assert.deepEqual(calls[1].body, calls[0].body, "the same item again");
  assert.deepEqual(calls[1].answer.items.map((i) => i.status), ["ok"]);
  assert.equal(w.stats().succeeded, 1);
  assert.equal(w.stats().refused, 0);
  assert.equal(h.fake.tasks.get(id).events.filter((e) => e.to === "succeeded").length, 1);
});

test("a finish answered 503 is retried after a pause; conflict and lease_lost are final", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  let refusals = 0;
  h.fake.hooks.before = (call) => {
    if (call.path === "/v1/worker/finish" && refusals === 0) {
      refusals++;
      return { status: 503, json: { error: { code: "store_unavailable", message: "down", trace_id: "x" } }, headers: { "retry-after": "0" } };
    }
  };
  h.fake.hooks.after = (call, answer) => {
    if (call.path === "/v1/worker/finish" && answer.status === 200 && refusals === 1) {
      refusals++;
      return { status: 200, json: { items: [{ lease: call.body.items[0].lease, status: "conflict" }] } };
    }
    return answer;
  };
  const w = h.worker();
  w.handle("ts.test", () => null);
  await h.submit();
  const run = w.run();
  await h.fake.waitForCall((c) => c.path === "/v1/worker/finish" && c.status === 200);
  await w.stop();
  await run;
  const calls = h.fake.callsTo("/v1/worker/finish");
  assert.equal(calls.length, 2, "503, then one retry whose answer (conflict) is final");
  assert.equal(calls[0].status, 503);
  assert.ok(calls[1].at - calls[0].at >= 400, `the retry after a 503 waited ${calls[1].at - calls[0].at} ms`);
  assert.equal(w.stats().refused, 1);
  assert.equal(w.stats().succeeded, 0);
});

test("outcomes of many tasks leave in few finish calls", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  const w = h.worker({ slots: 200 });
  w.handle("ts.test", () => null);
  const n = 600;
  const ids = [];
  for (let i = 0; i < n; i += 200) {
    const batch = await h.client.submitBatch(Array.from({ length: 200 }, (_, j) => ({ workflow: "ts.test", input: { i: i + j }, idempotencyKey: `k${i + j}` })));
    ids.push(...batch.map((r) => r.task.id));
  }
  const run = w.run();
  await allTerminal(h.fake, ids);
  await w.stop();
  await run;
  const calls = h.fake.callsTo("/v1/worker/finish");
  assert.equal(calls.reduce((n, c) => n + c.body.items.length, 0), n);
  assert.ok(calls.length <= n / 20, `${calls.length} finish calls for ${n} tasks`);
  assert.ok(calls.every((c) => c.body.items.length <= 1000));
  assert.equal(w.stats().succeeded, n);
});

test("a finish call refused whole (413) is split until the refused item stands alone", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { maxBodyBytes: 20_000 } });
  t.after(() => h.close());
  const allStarted = deferred();
  const release = deferred();
  let started = 0;
  const w = h.worker({ slots: 6 });
  w.handle("ts.test", async (task) => {
    if (++started === 6) allStarted.resolve();
    await release.promise;
    return task.input.big ? "x".repeat(30_000) : task.input.i;
  });
  const ids = [];
  for (let i = 0; i < 6; i++) ids.push((await h.submit({ i, big: i === 3 })).id);
  const run = w.run();
  await allStarted.promise;
  release.resolve();
  const tasks = [];
  for (const id of ids) tasks.push(await h.client.get(id, { waitMs: 5000 }));
  await w.stop();
  await run;
  tasks.forEach((x, i) => {
    if (i === 3) {
      assert.equal(x.state, "failed");
      assert.equal(x.error.code, "result_too_large");
    } else {
      assert.equal(x.state, "succeeded");
      assert.equal(x.result, i);
    }
  });
});

test("an outcome leaves only after its task's evidence was answered, even when the handler did not wait", { timeout: 10_000 }, async (t) => {
  const h = await setup();
  t.after(() => h.close());
  h.fake.hooks.before = async (call) => {
    if (call.path === "/v1/worker/evidence") await new Promise((r) => setTimeout(r, 200));
  };
  const w = h.worker();
  w.handle("ts.test", (task, { evidence }) => {
    evidence("note", { n: 1 }).catch(() => {}); // not awaited
    return "done";
  });
  const id = (await h.submit()).id;
  const run = w.run();
  await allTerminal(h.fake, [id]);
  await w.stop();
  await run;
  const ev = h.fake.callsTo("/v1/worker/evidence")[0];
  const fin = h.fake.callsTo("/v1/worker/finish")[0];
  assert.ok(fin.at >= ev.at + 150, "the finish was sent after the evidence was answered");
  assert.equal(h.fake.tasks.get(id).evidence.length, 1);
  assert.equal(h.fake.tasks.get(id).state, "succeeded");
});

test("a worker whose key is refused on heartbeat stops and run() rejects", { timeout: 10_000 }, async (t) => {
  const h = await setup({ fake: { heartbeatMs: 50 } });
  t.after(() => h.close());
  h.fake.hooks.before = (call) =>
    call.path === "/v1/worker/heartbeat" ? { status: 401, json: { error: { code: "unauthenticated", message: "revoked", trace_id: "" } } } : undefined;
  const w = h.worker({ shutdownGraceMs: 100 });
  let signal;
  w.handle("ts.test", (task, ctx) => {
    signal = ctx.signal;
    return new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  });
  await h.submit();
  await assert.rejects(w.run(), (err) => err.code === "unauthenticated" && err.status === 401);
  assert.equal(signal.reason.code, "shutdown");
});
