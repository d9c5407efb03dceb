// Integration tests against a real Docket server. They run only when
// DOCKET_URL and DOCKET_ADMIN_KEY are set (an admin key of tenant "demo");
// DOCKET_LEASE_TTL_MS is the server's --lease-ttl (default 30000). With the
// admin key they register their own remote workflows (ts.<run>.*), make a
// worker key, submit, and run Workers in this process and in child
// processes.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { Client, DocketError, TaskAbortedError, TaskFailure, Worker } from "../dist/index.js";

const url = process.env.DOCKET_URL;
const adminKey = process.env.DOCKET_ADMIN_KEY;
const leaseTtlMs = Number(process.env.DOCKET_LEASE_TTL_MS || 30_000);
const skip = url && adminKey ? false : "integration tests: set DOCKET_URL and DOCKET_ADMIN_KEY (an admin key of tenant demo) to run them against a server";
// Set by scripts/integration_on_fake.mjs: the fake server of testkit/ models
// the worker protocol, not the server's in-process workflows, dependencies,
// tenant limits, pauses or concurrency keys; the tests of those skip there.
const realOnly = process.env.DOCKET_SERVER_IS_FAKE === "1" ? "needs docket serve (the fake server does not model it)" : false;

const runId = Array.from({ length: 6 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join("");
const wf = (name) => `ts.${runId}.${name}`;
const childScript = fileURLToPath(new URL("../testkit/integration_child.mjs", import.meta.url));
const exampleScript = fileURLToPath(new URL("../examples/worker.mjs", import.meta.url));

async function admin(method, path, body) {
  const res = await fetch(url.replace(/\/+$/, "") + path, {
    method,
    headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: HTTP ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

function abortedReason(signal) {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true }));
}

if (skip) test("integration with a Docket server", { skip }, () => {});
else describe("integration with a Docket server", () => {
  let client;
  let workerKey;
  const workers = [];
  const newWorker = (opts = {}) => {
    const w = new Worker({ url, key: workerKey, slots: 4, waitMs: 2000, shutdownGraceMs: 2000, ...opts });
    workers.push(w);
    return w;
  };
  const run = (w) => {
    const p = w.run();
    p.catch(() => {}); // awaited by the test or stopped in after()
    return p;
  };

  test("setup: workflows and a worker key", async () => {
    for (const name of ["echo", "fail", "flaky", "cancel", "timeout", "evidence", "stop", "killed", "join", "retried", "paused", "keyed", "held", "refusing", "admitted"]) {
      const w = await admin("PUT", `/v1/admin/workflows/${wf(name)}`, { pool: "online" });
      assert.equal(w.remote, true);
    }
    await admin("PUT", "/v1/admin/workflows/ts.example.greet", { pool: "online" });
    const key = await admin("POST", "/v1/admin/keys", { tenant: "demo", principal: "ts-sdk", role: "worker" });
    workerKey = key.key;
    assert.ok(workerKey);
    client = new Client({ url, key: adminKey });
  });

  test("a handler's result is the task's result", { timeout: 30_000 }, async () => {
    const w = newWorker({ workerId: `ts-sdk-test/${process.pid}/echo` });
    const seen = [];
    w.handle(wf("echo"), (task) => {
      seen.push(task.traceparent);
      return { echo: task.input, attempt: task.attempt, workflow: task.workflow };
    });
    const running = run(w);
    const { task } = await client.submit(wf("echo"), { n: 42 });
    const done = await client.get(task.id, { waitMs: 20_000 });
    assert.equal(done.state, "succeeded");
    assert.deepEqual(done.result, { echo: { n: 42 }, attempt: 1, workflow: wf("echo") });
    // The handler saw the task span's traceparent, in the task's trace.
    assert.equal(seen.length, 1);
    assert.match(seen[0], new RegExp(`^00-${done.traceId}-[0-9a-f]{16}-01$`));
    // The server records sightings of workers on its own schedule: ask for a few seconds.
    let me;
    for (const end = Date.now() + 10_000; !me && Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
      me = (await admin("GET", "/v1/admin/workers")).workers.find((x) => x.id === w.workerId);
    }
    assert.ok(me, "GET /v1/admin/workers lists this worker");
    assert.match(me.sdk, /^typescript\//);
    assert.deepEqual(me.workflows, [wf("echo")]);
    assert.equal(me.slots, 4);
    await w.stop();
    await running;
  });

  test("a handler reads its dependencies' results (fan-in)", { timeout: 30_000, skip: realOnly }, async () => {
    const w = newWorker();
    w.handle(wf("join"), async (_task, ctx) => {
      const deps = await ctx.dependencyResults();
      return { total: deps.reduce((n, d) => n + d.result, 0), states: deps.map((d) => d.state) };
    });
    const running = run(w);
    const a = (await client.submit("demo.echo", 2)).task.id;
    const b = (await client.submit("demo.echo", 40)).task.id;
    const { task } = await client.submit(wf("join"), null, { dependsOn: [a, b] });
    const done = await client.get(task.id, { waitMs: 20_000 });
    assert.equal(done.state, "succeeded");
    assert.deepEqual(done.result, { total: 42, states: ["succeeded", "succeeded"] });
    await w.stop();
    await running;
  });

  test("a non-retryable TaskFailure ends the task failed with its code and message", { timeout: 30_000 }, async () => {
    const w = newWorker();
    w.handle(wf("fail"), () => {
      throw new TaskFailure("bad_input", "input needs an x", { retryable: false });
    });
    const running = run(w);
    const { task } = await client.submit(wf("fail"), {}, { maxAttempts: 3 });
    const done = await client.get(task.id, { waitMs: 20_000 });
    assert.equal(done.state, "failed");
    assert.deepEqual(done.error, { code: "bad_input", message: "input needs an x" });
    assert.equal(done.attempt, 1, "not retried");
    await w.stop();
    await running;
  });

  test("a retryable failure is retried, and attempt 2 succeeds", { timeout: 90_000 }, async () => {
    const w = newWorker();
    w.handle(wf("flaky"), (task) => {
      if (task.attempt === 1) throw new TaskFailure("flaky_upstream", "try again");
      return { attempt: task.attempt };
    });
    const running = run(w);
    const { task } = await client.submit(wf("flaky"), {}, { maxAttempts: 3 });
    const done = await client.get(task.id, { waitMs: 80_000 });
    assert.equal(done.state, "succeeded");
    assert.equal(done.attempt, 2);
    assert.deepEqual(done.result, { attempt: 2 });
    await w.stop();
    await running;
  });

  test("retry queues a failed task again, and it succeeds", { timeout: 30_000 }, async () => {
    const runs = [];
    const w = newWorker();
    w.handle(wf("retried"), (task) => {
      runs.push(task.attempt);
      if (runs.length === 1) throw new TaskFailure("upstream_down", "down for now", { retryable: false });
      return { input: task.input };
    });
    const running = run(w);
    const { task } = await client.submit(wf("retried"), { n: 7 }, { maxAttempts: 1 });
    assert.equal((await client.get(task.id, { waitMs: 20_000 })).state, "failed");
    const again = await client.retry(task.id);
    assert.deepEqual([again.id, again.state, again.error], [task.id, "queued", null]);
    const done = await client.get(task.id, { waitMs: 20_000 });
    assert.equal(done.state, "succeeded");
    assert.deepEqual(done.result, { input: { n: 7 } });
    assert.equal(runs.length, 2);
    const events = await client.events(task.id);
    assert.ok(events.some((e) => e.from === "failed" && e.to === "queued" && e.code === "retried"), "the history shows the retry");
    await w.stop();
    await running;
  });

  test("retry of a succeeded task is 409 not_retryable", { timeout: 30_000, skip: realOnly }, async () => {
    const { task } = await client.submit("demo.echo", { n: 1 });
    assert.equal((await client.get(task.id, { waitMs: 20_000 })).state, "succeeded");
    await assert.rejects(client.retry(task.id), (err) => err instanceof DocketError && err.code === "not_retryable" && err.status === 409);
    assert.equal((await client.get(task.id)).state, "succeeded");
  });

  test("retry on a full tenant is 429 tenant_quota_exceeded, then admitted once there is room", { timeout: 30_000, skip: realOnly }, async () => {
    // A tenant of its own with room for one task in flight; nothing serves
    // the workflow, so a submitted task stays queued (in flight).
    const tenant = `ts-cap${runId}`;
    await admin("PATCH", `/v1/admin/tenants/${tenant}`, { max_in_flight: 1 });
    const made = await admin("POST", "/v1/admin/keys", { tenant, principal: "ts-sdk", role: "member" });
    const member = new Client({ url, key: made.key });
    const first = (await member.submit(wf("held"), { n: 1 })).task;
    assert.equal((await member.cancel(first.id)).state, "cancelled");
    const second = (await member.submit(wf("held"), { n: 2 })).task;
    await assert.rejects(member.retry(first.id), (err) => {
      assert.ok(err instanceof DocketError);
      assert.deepEqual([err.code, err.status, err.overloaded], ["tenant_quota_exceeded", 429, true]);
      assert.ok(err.retryAfterMs > 0, "with Retry-After");
      return true;
    });
    assert.equal((await member.get(first.id)).state, "cancelled");
    await member.cancel(second.id);
    assert.equal((await member.retry(first.id)).state, "queued");
    await member.cancel(first.id);
  });

  test("input returns the task's input as admitted", async () => {
    const value = { text: "héllo ✓", n: [1, 2.5, -3], nested: { ok: true, none: null } };
    const { task } = await client.submit(wf("held"), value);
    const empty = (await client.submit(wf("held"), null)).task;
    try {
      assert.deepEqual(await client.input(task.id), value);
      assert.equal(await client.input(empty.id), null);
      await assert.rejects(client.input("01a00000-0000-7000-8000-000000000000"), (err) => err.code === "not_found" && err.status === 404);
    } finally {
      await client.cancel(task.id);
      await client.cancel(empty.id);
    }
  });

  test("a paused workflow's task waits (waitingOn paused) until resumed, then runs", { timeout: 30_000, skip: realOnly }, async () => {
    const name = wf("paused");
    assert.deepEqual((await client.pause({ workflow: name })).filter((p) => p.workflow === name), [{ workflow: name }]);
    const w = newWorker();
    w.handle(name, (task) => ({ attempt: task.attempt }));
    const running = run(w);
    try {
      const { task } = await client.submit(name, {});
      // The worker's claims pass it over while it is paused.
      const held = await client.get(task.id, { waitMs: 1500 });
      assert.deepEqual([held.state, held.waitingOn], ["queued", "paused"]);
      assert.equal(w.stats().claimed, 0);
      assert.ok(!(await client.resume({ workflow: name })).some((p) => p.workflow === name));
      const done = await client.get(task.id, { waitMs: 20_000 });
      assert.equal(done.state, "succeeded");
      assert.deepEqual(done.result, { attempt: 1 });
    } finally {
      await client.resume({ workflow: name });
      await w.stop();
      await running;
    }
  });

  test("a pause that refuses submissions answers 409 submissions_paused until the resume; then the same submit is admitted", async () => {
    // Nothing serves these workflows: what is admitted stays queued, and is cancelled at the end.
    const name = wf("refusing");
    const admitted = [];
    try {
      const paused = await client.pause({ workflow: name }, { refuseSubmissions: true });
      assert.deepEqual(paused.filter((p) => p.workflow === name), [{ workflow: name, refuse_submissions: true }]);
      const listed = (await admin("GET", "/v1/admin/workflows")).workflows.find((w) => w.name === name);
      assert.deepEqual([listed.paused, listed.refuse_submissions], [true, true]);
      const key = `refusing-${runId}`;
      await assert.rejects(client.submit(name, { n: 1 }, { idempotencyKey: key }), (err) => {
        assert.ok(err instanceof DocketError);
        assert.deepEqual([err.code, err.status, err.transient], ["submissions_paused", 409, false]);
        return true;
      });
      // In a batch that item alone is refused.
      const results = await client.submitBatch([
        { workflow: name, input: { n: 2 }, idempotencyKey: `${key}-b` },
        { workflow: wf("admitted"), input: { n: 3 }, idempotencyKey: `${key}-c` },
      ]);
      assert.deepEqual(results.map((r) => [r.status, r.error?.code ?? null]), [[409, "submissions_paused"], [201, null]]);
      admitted.push(results[1].task.id);
      // The item of the answer resumes as it is.
      assert.ok(!(await client.resume(paused.find((p) => p.workflow === name))).some((p) => p.workflow === name));
      // Nothing was written for the refused request: the same one is a new task now.
      const again = await client.submit(name, { n: 1 }, { idempotencyKey: key });
      admitted.push(again.task.id);
      assert.deepEqual([again.replayed, again.task.state, again.task.waitingOn], [false, "queued", null]);
    } finally {
      await client.resume({ workflow: name });
      for (const id of admitted) await client.cancel(id);
    }
  });

  test("a tenant is paused, rate limited, resumed and its limit removed", { skip: realOnly }, async () => {
    const tenant = `ts-flow${runId}`;
    const listed = async () => (await admin("GET", "/v1/admin/tenants")).tenants.find((x) => x.id === tenant);
    const got = await client.setTenantRateLimit(tenant, { ratePerSecond: 50, burst: 5 });
    assert.deepEqual([got.id, got.paused, got.ratePerSecond, got.burst], [tenant, false, 50, 5]);
    assert.ok((await client.pause({ tenant })).some((p) => p.tenant === tenant));
    let seen = await listed();
    assert.deepEqual([seen.paused, seen.refuse_submissions, seen.rate_per_second, seen.burst], [true, false, 50, 5]);
    // A limit left out stays as it is.
    const kept = await client.setTenantRateLimit(tenant, { burst: 0 });
    assert.deepEqual([kept.ratePerSecond, kept.paused, kept.refuseSubmissions], [50, true, false]);
    // Paused again, refusing: the tenant's limits say so.
    assert.ok((await client.pause({ tenant }, { refuseSubmissions: true })).some((p) => p.tenant === tenant && p.refuse_submissions === true));
    assert.equal((await client.setTenantRateLimit(tenant, { burst: 0 })).refuseSubmissions, true);
    assert.ok(!(await client.resume({ tenant })).some((p) => p.tenant === tenant));
    const removed = await client.setTenantRateLimit(tenant, { ratePerSecond: null });
    assert.deepEqual([removed.paused, removed.ratePerSecond, removed.burst], [false, null, null]);
    seen = await listed();
    assert.deepEqual([seen.paused, seen.rate_per_second], [false, null]);
  });

  test("setWorkflowLimits: a higher concurrencyPerKey gives a waiting task of the key its slot", { skip: realOnly }, async () => {
    // Nothing serves the workflow: a task with a slot of its key is ready
    // (waiting on nothing but a worker), a second one waits for the slot.
    const name = wf("keyed");
    const first = (await client.submit(name, { n: 1 }, { concurrencyKey: "k1" })).task;
    const second = (await client.submit(name, { n: 2 }, { concurrencyKey: "k1" })).task;
    try {
      assert.equal((await client.get(first.id)).waitingOn, null);
      assert.equal((await client.get(second.id)).waitingOn, "concurrency_key");
      const got = await client.setWorkflowLimits(name, { concurrencyPerKey: 2, ratePerSecond: 100, burst: 10 });
      assert.deepEqual(got, { name, paused: false, refuseSubmissions: false, ratePerSecond: 100, burst: 10, concurrencyPerKey: 2 });
      assert.equal((await client.get(second.id)).waitingOn, null, "the new slot went to the waiting task at once");
      const reset = await client.setWorkflowLimits(name, { ratePerSecond: null, concurrencyPerKey: null });
      assert.deepEqual([reset.ratePerSecond, reset.burst, reset.concurrencyPerKey], [null, null, 1]);
    } finally {
      await client.cancel(first.id);
      await client.cancel(second.id);
    }
  });

  test("a cancel reaches the running handler's signal within about 2 s", { timeout: 30_000 }, async () => {
    const started = deferred();
    const abortedAt = deferred();
    const w = newWorker();
    w.handle(wf("cancel"), async (task, { signal }) => {
      started.resolve();
      const reason = await abortedReason(signal);
      abortedAt.resolve({ reason, at: Date.now() });
      return "ignored";
    });
    const running = run(w);
    const { task } = await client.submit(wf("cancel"), {});
    await started.promise;
    const t0 = Date.now();
    await client.cancel(task.id);
    const { reason, at } = await abortedAt.promise;
    assert.ok(reason instanceof TaskAbortedError);
    assert.equal(reason.code, "cancelled");
    assert.ok(at - t0 <= 2500, `the abort came ${at - t0} ms after the cancel`);
    assert.equal((await client.get(task.id, { waitMs: 10_000 })).state, "cancelled");
    await w.stop();
    await running;
    assert.equal(w.stats().dropped, 1);
  });

  test("a short timeout_ms ends timed_out and aborts the handler", { timeout: 30_000 }, async () => {
    const abortedWith = deferred();
    const w = newWorker();
    w.handle(wf("timeout"), async (task, { signal }) => {
      abortedWith.resolve(await abortedReason(signal));
      return "late";
    });
    const running = run(w);
    const { task } = await client.submit(wf("timeout"), {}, { timeoutMs: 1500 });
    const reason = await abortedWith.promise;
    assert.equal(reason.code, "timed_out");
    const done = await client.get(task.id, { waitMs: 15_000 });
    assert.equal(done.state, "timed_out");
    await w.stop();
    await running;
  });

  test("evidence shows in GET /v1/tasks/{id}/evidence", { timeout: 30_000 }, async () => {
    const w = newWorker();
    w.handle(wf("evidence"), async (task, { evidence }) => {
      await evidence("rule", { rule: "length", pass: true });
      await evidence("rule", { rule: "tone", pass: false });
      return { rules: 2 };
    });
    const running = run(w);
    const { task } = await client.submit(wf("evidence"), { text: "hello" });
    assert.equal((await client.get(task.id, { waitMs: 20_000 })).state, "succeeded");
    const ev = await client.evidence(task.id);
    assert.deepEqual(
      ev.map((e) => [e.kind, e.body]),
      [
        ["rule", { rule: "length", pass: true }],
        ["rule", { rule: "tone", pass: false }],
      ],
    );
    assert.equal(ev[0].attempt, 1);
    await w.stop();
    await running;
  });

  test("stop() with a long task running releases it: running → queued with code shutdown, attempt not charged", { timeout: 30_000 }, async () => {
    const started = deferred();
    const abortedWith = deferred();
    const w = newWorker({ shutdownGraceMs: 300 });
    w.handle(wf("stop"), async (task, { signal }) => {
      started.resolve(task.attempt);
      abortedWith.resolve(await abortedReason(signal));
      return "never sent";
    });
    const running = run(w);
    const { task } = await client.submit(wf("stop"), {}, { maxAttempts: 3 });
    const firstAttempt = await started.promise;
    assert.equal(firstAttempt, 1);
    await w.stop();
    await running;
    assert.equal((await abortedWith.promise).code, "shutdown");
    const after = await client.get(task.id);
    assert.equal(after.state, "queued", "queued again at once");
    const events = await client.events(task.id);
    const last = events.at(-1);
    assert.deepEqual([last.from, last.to, last.code], ["running", "queued", "shutdown"]);
    assert.equal(w.stats().released, 1);
    // Another worker runs it as the same attempt: the release did not charge it.
    const w2 = newWorker();
    w2.handle(wf("stop"), (t2) => ({ attempt: t2.attempt }));
    const running2 = run(w2);
    const done = await client.get(task.id, { waitMs: 20_000 });
    assert.equal(done.state, "succeeded");
    assert.deepEqual(done.result, { attempt: firstAttempt }, "the attempt is not charged");
    await w2.stop();
    await running2;
  });

  test("a worker killed with SIGKILL: its task is recovered after the lease TTL and finished by another worker", { timeout: leaseTtlMs * 4 + 60_000 }, async (t) => {
    const child = spawn(process.execPath, [childScript], {
      env: { ...process.env, DOCKET_URL: url, DOCKET_WORKER_KEY: workerKey, DOCKET_WORKFLOW: wf("killed") },
      stdio: ["ignore", "pipe", "inherit"],
    });
    t.after(() => child.kill("SIGKILL"));
    const lines = createInterface({ input: child.stdout });
    const { task } = await client.submit(wf("killed"), { survive: true }, { maxAttempts: 3 });
    let line;
    for await (const l of lines) {
      line = l;
      break;
    }
    assert.equal(line, `started ${task.id} 1`);
    child.kill("SIGKILL");
    await once(child, "exit");
    const killedAt = Date.now();

    const w = newWorker();
    w.handle(wf("killed"), (t2) => ({ recovered: true, attempt: t2.attempt }));
    const running = run(w);
    const done = await client.get(task.id, { waitMs: leaseTtlMs * 4 + 30_000 });
    assert.equal(done.state, "succeeded");
    assert.deepEqual(done.result, { recovered: true, attempt: 2 });
    assert.ok(Date.now() - killedAt >= leaseTtlMs * 0.25, "recovered when the lease expired, not before");
    const events = await client.events(task.id);
    assert.ok(
      events.some((e) => e.from === "running" && e.to === "queued"),
      "the history shows the recovery (running → queued)",
    );
    await w.stop();
    await running;
  });

  test("the README example (examples/worker.mjs) runs and stops on SIGTERM", { timeout: 30_000 }, async (t) => {
    const child = spawn(process.execPath, [exampleScript], {
      env: { ...process.env, DOCKET_URL: url, DOCKET_WORKER_KEY: workerKey },
      stdio: ["ignore", "inherit", "inherit"],
    });
    t.after(() => child.kill("SIGKILL"));
    const { task } = await client.submit("ts.example.greet", { name: "Ada" });
    const done = await client.get(task.id, { waitMs: 20_000 });
    assert.equal(done.state, "succeeded");
    assert.deepEqual(done.result, { greeting: "hello, Ada" });
    child.kill("SIGTERM");
    const [code, signal] = await once(child, "exit");
    assert.deepEqual([code, signal], [0, null]);
  });

  test("teardown", async () => {
    await Promise.all(workers.map((w) => w.stop()));
  });
});
