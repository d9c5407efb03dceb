// A fake Docket server in memory, for the SDK's tests and benchmarks: the
// worker protocol (docs/worker-protocol.md) and enough of the task and
// admin API to submit, watch and cancel tasks. It is strict where the real
// server is (unknown fields are 400 invalid_request, leases are fenced by
// task and epoch and bound to the key that claimed), keeps each task's event
// history, recovers expired leases, times out overdue tasks and retries
// retryable failures after a short delay, and retries a terminal task on
// request. Pauses and limits (flow control) are recorded and answered, not
// enforced; it does not do priorities, dependencies or schedules.
//
// Tests drive faults with two hooks, called for every request:
//   fake.hooks.before = (call) => undefined | "drop" | { status, json }
//   fake.hooks.after  = (call, answer) => undefined | "drop" | { status, json }
// "drop" destroys the connection without an answer (after `after`, the
// call has been applied: a lost answer). `call` is { path, body, at }.
//
// Standalone: node testkit/fake_docket.mjs [--port 0] [--lease-ttl-ms N]
// [--heartbeat-ms N] prints {"url","admin_key"} on one line and serves
// until SIGTERM or SIGINT.

import crypto from "node:crypto";
import { EventEmitter } from "node:events";
import http from "node:http";

const TERMINAL = new Set(["succeeded", "failed", "cancelled", "timed_out"]);
const RETRYABLE = new Set(["failed", "cancelled", "timed_out"]);
const CODE = /^[a-z][a-z0-9_]{0,63}$/;
const VISIBLE = /^[\x21-\x7e]+$/;
const WORKFLOW_NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

class HttpError extends Error {
  constructor(status, code, message, headers) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

const invalid = (message) => new HttpError(400, "invalid_request", message);

/** A first-in first-out queue of task IDs. */
class Fifo {
  items = [];
  head = 0;
  push(v) {
    this.items.push(v);
  }
  shift() {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }
  get length() {
    return this.items.length - this.head;
  }
}

function checkFields(obj, allowed, what) {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) throw invalid(`${what} must be a JSON object`);
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) throw invalid(`${what}: unknown field ${JSON.stringify(k)}`);
  }
}

function intIn(v, lo, hi, what, dflt) {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < lo || v > hi) throw invalid(`${what} must be an integer from ${lo} to ${hi}`);
  return v;
}

function parseDuration(v) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(v ?? "");
  if (!m) return null;
  const n = Number(m[1]);
  return m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

export class FakeDocket extends EventEmitter {
  constructor(options = {}) {
    super();
    this.setMaxListeners(0);
    this.heartbeatMs = options.heartbeatMs ?? 1000;
    this.leaseTtlMs = options.leaseTtlMs ?? 30_000;
    this.recoveryIntervalMs = options.recoveryIntervalMs ?? Math.max(10, Math.min(500, this.leaseTtlMs / 4));
    this.retryDelayMs = options.retryDelayMs ?? 50;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 600_000;
    this.maxBodyBytes = options.maxBodyBytes ?? 16 << 20;
    this.secret = crypto.randomBytes(32);
    /** Every request: { path, method, body, at, status }. */
    this.calls = [];
    this.recordCalls = options.recordCalls ?? true;
    this.hooks = { before: null, after: null };
    this.keys = new Map(); // key → principal
    this.workflows = new Map();
    this.tasks = new Map();
    this.idempotency = new Map();
    this.queues = new Map(); // tenant\0workflow\0pool → Fifo
    this.running = new Set();
    this.claimWaiters = new Set();
    this.taskWaiters = new Map(); // id → Set<fn>
    this.workers = new Map();
    this.paused = []; // [{ pool | tenant | workflow: key, refuse_submissions?: true }]
    this.limits = new Map(); // "tenant:ID" | "workflow:NAME" → { rate_per_second, burst, concurrency_per_key }
    this.seq = 0;
    this.eventSeq = 0;
    this.evidenceSeq = 0;
    this.wakeScheduled = false;
    this.adminKey = this.makeKey({ tenant: options.tenant ?? "demo", principal: "admin", role: "admin" }).key;
    this.server = http.createServer((req, res) => this.serve(req, res));
    this.server.keepAliveTimeout = 30_000;
    this.sockets = new Set();
    this.server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  async listen(port = 0) {
    await new Promise((resolve) => this.server.listen(port, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    this.recoveryTimer = setInterval(() => this.recover(), this.recoveryIntervalMs);
    this.recoveryTimer.unref();
    return this;
  }

  async close() {
    clearInterval(this.recoveryTimer);
    for (const w of this.claimWaiters) w.finish([]);
    for (const t of this.tasks.values()) clearTimeout(t.deadlineTimer);
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  // --- helpers for tests ----------------------------------------------------

  /** Resolves with the first call (past or future) for which pred is true. */
  waitForCall(pred, timeoutMs = 5000, what = "a call") {
    const found = this.calls.find(pred);
    if (found) return Promise.resolve(found);
    return this.waitForEvent("call", pred, timeoutMs, what);
  }

  /** Resolves with the task once pred(task) holds. */
  waitForTask(id, pred, timeoutMs = 5000) {
    const t = this.tasks.get(id);
    if (t && pred(t)) return Promise.resolve(t);
    return this.waitForEvent("task", (t) => t.id === id && pred(t), timeoutMs, `task ${id}`);
  }

  waitForEvent(name, pred, timeoutMs, what) {
    return new Promise((resolve, reject) => {
      const on = (v) => {
        if (!pred(v)) return;
        clearTimeout(timer);
        this.off(name, on);
        resolve(v);
      };
      const timer = setTimeout(() => {
        this.off(name, on);
        reject(new Error(`fake docket: no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.on(name, on);
    });
  }

  /** Calls to path so far. */
  callsTo(path) {
    return this.calls.filter((c) => c.path === path);
  }

  makeKey({ tenant, principal, role = "member", all_tenants = false }) {
    const id = `key_${crypto.randomBytes(4).toString("hex")}`;
    const key = `dk_${crypto.randomBytes(18).toString("base64url")}`;
    const p = { id, key, tenant, principal, role, all_tenants, created_at: new Date().toISOString() };
    this.keys.set(key, p);
    return p;
  }

  registerWorkflow(name, spec = {}) {
    const wf = { name, pool: spec.pool ?? "online", timeout_ms: spec.timeout_ms ?? null, max_attempts: spec.max_attempts ?? null, remote: true };
    this.workflows.set(name, wf);
    return wf;
  }

  // --- HTTP -----------------------------------------------------------------

  async serve(req, res) {
    const url = new URL(req.url, "http://x");
    const path = url.pathname;
    const chunks = [];
    let size = 0;
    for await (const c of req) {
      size += c.length;
      if (size <= this.maxBodyBytes) chunks.push(c);
    }
    const call = { method: req.method, path, body: undefined, at: Date.now(), status: 0 };
    let answer;
    try {
      if (size > this.maxBodyBytes) throw new HttpError(413, "payload_too_large", "the body is over the limit");
      const text = Buffer.concat(chunks).toString("utf8");
      if (text !== "") {
        try {
          call.body = JSON.parse(text);
        } catch {
          throw invalid("the body is not JSON");
        }
      }
      if (this.hooks.before) {
        const r = await this.hooks.before(call);
        if (r === "drop") return this.drop(req, res, call);
        if (r) answer = r;
      }
      if (!answer) {
        const principal = this.authenticate(req);
        answer = await this.route(req, res, url, call.body, principal);
      }
    } catch (err) {
      answer = this.errorAnswer(err);
    }
    if (answer === undefined) return; // the client went away during a long poll
    if (this.hooks.after) {
      const r = await this.hooks.after(call, answer);
      if (r === "drop") return this.drop(req, res, call);
      if (r) answer = r;
    }
    call.status = answer.status;
    call.answer = answer.json;
    this.record(call);
    const body = answer.json === undefined ? "" : JSON.stringify(answer.json);
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(body);
  }

  record(call) {
    if (this.recordCalls) this.calls.push(call);
    this.emit("call", call);
  }

  drop(req, res, call) {
    call.status = -1; // no answer
    this.record(call);
    req.socket.destroy();
  }

  errorAnswer(err) {
    if (err instanceof HttpError) {
      return { status: err.status, json: { error: { code: err.code, message: err.message, trace_id: "fake" } }, headers: err.headers };
    }
    return { status: 500, json: { error: { code: "internal", message: "internal error", trace_id: "fake" } } };
  }

  authenticate(req) {
    const h = req.headers.authorization ?? "";
    const m = /^Bearer (.+)$/.exec(h);
    const p = m ? this.keys.get(m[1]) : undefined;
    if (!p) throw new HttpError(401, "unauthenticated", "no valid key");
    return p;
  }

  async route(req, res, url, body, p) {
    const path = url.pathname;
    const m = req.method;
    if (path.startsWith("/v1/worker/")) {
      if (p.role !== "worker") throw new HttpError(403, "forbidden", "only worker keys");
      if (m !== "POST") throw new HttpError(405, "method_not_allowed", "POST only");
      switch (path) {
        case "/v1/worker/claim":
          return this.claim(body, p, res);
        case "/v1/worker/heartbeat":
          return this.heartbeat(body, p);
        case "/v1/worker/finish":
          return this.finish(body, p);
        case "/v1/worker/evidence":
          return this.addEvidence(body, p);
        case "/v1/worker/release":
          return this.release(body, p);
      }
      throw new HttpError(404, "not_found", "no such route");
    }
    if (p.role === "worker") throw new HttpError(403, "forbidden", "worker keys call /v1/worker/* only");
    let mm;
    if (path.startsWith("/v1/admin/")) {
      if (p.role !== "admin") throw new HttpError(403, "forbidden", "admin only");
      if ((mm = /^\/v1\/admin\/workflows\/([^/]+)$/.exec(path)) && m === "PUT") return this.putWorkflow(decodeURIComponent(mm[1]), body);
      if (path === "/v1/admin/keys" && m === "POST") return this.postKey(body);
      if (path === "/v1/admin/workers" && m === "GET") return this.listWorkers();
      if (path === "/v1/admin/workflows" && m === "GET") return this.listWorkflows();
      if ((path === "/v1/admin/pause" || path === "/v1/admin/resume") && m === "POST") return this.setPaused(body, path.endsWith("/pause"));
      if ((mm = /^\/v1\/admin\/(tenant|workflow)s\/([^/]+)$/.exec(path)) && m === "PATCH") return this.patchLimits(mm[1], decodeURIComponent(mm[2]), body);
      throw new HttpError(404, "not_found", "no such route");
    }
    if (path === "/v1/tasks" && m === "POST") return this.submitOne(req, body, p);
    if (path === "/v1/tasks/batch" && m === "POST") return this.submitBatch(body, p);
    if ((mm = /^\/v1\/tasks\/([^/]+)(\/(cancel|retry|events|evidence|input))?$/.exec(path))) {
      const id = decodeURIComponent(mm[1]);
      const t = this.tasks.get(id);
      if (!t || t.tenant !== p.tenant) throw new HttpError(404, "not_found", "no such task");
      const sub = mm[3];
      if (!sub && m === "GET") return this.getTask(t, url, res);
      if (sub === "cancel" && m === "POST") return { status: 200, json: this.cancel(t) };
      if (sub === "retry" && m === "POST") return { status: 200, json: this.retry(t) };
      if (sub === "events" && m === "GET") return { status: 200, json: { events: t.events } };
      if (sub === "evidence" && m === "GET") return { status: 200, json: { evidence: t.evidence } };
      if (sub === "input" && m === "GET") return { status: 200, json: t.input };
    }
    throw new HttpError(404, "not_found", "no such route");
  }

  // --- admin ----------------------------------------------------------------

  putWorkflow(name, body) {
    if (!WORKFLOW_NAME.test(name) || name.length > 128) throw invalid("bad workflow name");
    checkFields(body, ["pool", "timeout_ms", "max_attempts"], "the request body");
    if (body.pool !== "online" && body.pool !== "offline") throw invalid("pool must be online or offline");
    return { status: 200, json: this.registerWorkflow(name, body) };
  }

  postKey(body) {
    checkFields(body, ["tenant", "principal", "role", "all_tenants"], "the request body");
    if (!body.tenant || !body.principal) throw invalid("tenant and principal are required");
    const p = this.makeKey(body);
    return { status: 201, json: p };
  }

  setPaused(body, paused) {
    // As the server: a pause may say refuse_submissions (a boolean), a
    // resume may not; a pause again sets the refusal anew.
    checkFields(body, paused ? ["pool", "tenant", "workflow", "refuse_submissions"] : ["pool", "tenant", "workflow"], "the request body");
    const { refuse_submissions: refuse = false, ...target } = body;
    if (typeof refuse !== "boolean") throw invalid('"refuse_submissions" must be true or false');
    const named = Object.entries(target);
    if (named.length !== 1 || typeof named[0][1] !== "string" || named[0][1] === "") {
      throw invalid('name exactly one of "pool", "tenant" or "workflow"');
    }
    const [scope, key] = named[0];
    const i = this.paused.findIndex((t) => t[scope] === key);
    const item = refuse ? { [scope]: key, refuse_submissions: true } : { [scope]: key };
    if (paused && i < 0) this.paused.push(item);
    if (paused && i >= 0) this.paused[i] = item;
    if (!paused && i >= 0) this.paused.splice(i, 1);
    return { status: 200, json: { paused: this.paused.map((t) => ({ ...t })) } };
  }

  /** Whether the scope's key is paused with refuse_submissions. */
  refusing(scope, key) {
    return this.paused.some((t) => t[scope] === key && t.refuse_submissions === true);
  }

  /** PATCH of a tenant's or workflow's limits: only the fields given change, null puts one back to its default. */
  patchLimits(scope, key, body) {
    const defaults = { rate_per_second: null, burst: 0, concurrency_per_key: 1 };
    checkFields(body, scope === "tenant" ? ["max_in_flight", "weight", "rate_per_second", "burst"] : Object.keys(defaults), "the request body");
    const id = `${scope}:${key}`;
    const rule = this.limits.get(id) ?? { ...defaults };
    for (const [name, v] of Object.entries(body)) rule[name] = v === null ? defaults[name] ?? null : v;
    this.limits.set(id, rule);
    const rate = rule.rate_per_second;
    const shown = {
      paused: this.paused.some((t) => t[scope] === key),
      refuse_submissions: this.refusing(scope, key),
      rate_per_second: rate,
      burst: rate === null ? null : rule.burst,
    };
    if (scope === "tenant") return { status: 200, json: { id: key, max_in_flight: rule.max_in_flight ?? 0, weight: rule.weight ?? 1, in_flight: 0, ...shown } };
    return { status: 200, json: { name: key, ...shown, concurrency_per_key: rule.concurrency_per_key } };
  }

  /** The registered workflows with their pause (rate limits and keys left out). */
  listWorkflows() {
    const workflows = [...this.workflows.values()].map((w) => ({
      ...w,
      paused: this.paused.some((t) => t.workflow === w.name),
      refuse_submissions: this.refusing("workflow", w.name),
    }));
    return { status: 200, json: { workflows } };
  }

  listWorkers() {
    const now = Date.now();
    const workers = [...this.workers.values()].filter((w) => now - Date.parse(w.last_seen_at) < this.leaseTtlMs);
    return { status: 200, json: { workers } };
  }

  // --- tasks ----------------------------------------------------------------

  submitOne(req, body, p) {
    const key = req.headers["idempotency-key"];
    if (typeof key !== "string" || key.length < 1 || key.length > 255 || !VISIBLE.test(key)) {
      throw invalid("the Idempotency-Key header is required (1 to 255 visible ASCII)");
    }
    const r = this.admit(p, key, body);
    if (r.error) throw r.error;
    return { status: r.status, json: this.wire(r.task) };
  }

  submitBatch(body, p) {
    checkFields(body, ["tasks"], "the request body");
    if (!Array.isArray(body.tasks) || body.tasks.length < 1 || body.tasks.length > 1000) throw invalid("tasks: 1 to 1000 items");
    const results = body.tasks.map((item) => {
      try {
        checkFields(item, ["idempotency_key", "workflow", "input", "pool", "timeout_ms", "priority", "max_attempts", "run_at"], "a task");
        const { idempotency_key: key, ...rest } = item;
        if (typeof key !== "string" || key === "") throw invalid("idempotency_key is required");
        const r = this.admit(p, key, rest);
        if (r.error) throw r.error;
        return { status: r.status, task: this.wire(r.task) };
      } catch (err) {
        const a = this.errorAnswer(err);
        return { status: a.status, error: { code: a.json.error.code, message: a.json.error.message } };
      }
    });
    return { status: 200, json: { results } };
  }

  admit(p, key, body) {
    checkFields(body, ["workflow", "input", "pool", "timeout_ms", "priority", "max_attempts", "run_at"], "the request body");
    const wf = this.workflows.get(body.workflow);
    if (!wf) return { error: new HttpError(400, "unknown_workflow", "the workflow is not registered") };
    const canonical = JSON.stringify(body);
    const idemKey = `${p.tenant}\0${key}`;
    const bound = this.idempotency.get(idemKey);
    if (bound) {
      if (bound.canonical !== canonical) return { error: new HttpError(409, "idempotency_conflict", "key reused with another request") };
      return { status: 200, task: this.tasks.get(bound.id) };
    }
    const pool = body.pool ?? wf.pool;
    if (pool !== "online" && pool !== "offline") return { error: invalid("pool must be online or offline") };
    if (this.refusing("pool", pool) || this.refusing("tenant", p.tenant) || this.refusing("workflow", body.workflow)) {
      return { error: new HttpError(409, "submissions_paused", "the task's pool, tenant or workflow is paused and refuses submissions") };
    }
    const timeout = intIn(body.timeout_ms, 1, 86_400_000, "timeout_ms", wf.timeout_ms ?? this.defaultTimeoutMs);
    const maxAttempts = intIn(body.max_attempts, 1, 100, "max_attempts", wf.max_attempts ?? 3);
    const now = Date.now();
    const runAt = body.run_at ? Date.parse(body.run_at) : null;
    if (runAt !== null && Number.isNaN(runAt)) return { error: invalid("run_at must be RFC 3339") };
    const id = `tsk_${(++this.seq).toString(36).padStart(6, "0")}${crypto.randomBytes(3).toString("hex")}`;
    const t = {
      id,
      tenant: p.tenant,
      author: p.principal,
      workflow: body.workflow,
      pool,
      state: "queued",
      attempt: 0, // counted at claim, as the real server does
      max_attempts: maxAttempts,
      priority: body.priority ?? 0,
      created_at: new Date(now).toISOString(),
      run_at: runAt ? new Date(runAt).toISOString() : null,
      started_at: null,
      finished_at: null,
      deadline_at: new Date((runAt ?? now) + timeout).toISOString(),
      trace_id: crypto.randomBytes(16).toString("hex"),
      config_version: "fake-1",
      result: null,
      error: null,
      waiting_on: null,
      input: body.input === undefined ? null : body.input,
      timeoutMs: timeout,
      epoch: 0,
      endedFromEpoch: -1,
      finishes: new Map(),
      events: [],
      evidence: [],
    };
    this.tasks.set(id, t);
    this.idempotency.set(idemKey, { id, canonical });
    this.event(t, "", "queued", "");
    const deadlineIn = Date.parse(t.deadline_at) - now;
    t.deadlineTimer = setTimeout(() => this.deadline(t), deadlineIn);
    t.deadlineTimer.unref();
    this.enqueue(t, runAt ? runAt - now : 0);
    return { status: 201, task: t };
  }

  wire(t) {
    const { input, timeoutMs, epoch, endedFromEpoch, finishes, events, evidence, deadlineTimer, leaseExpiresAt, leaseKeyId, ...pub } = t;
    return pub;
  }

  getTask(t, url, res) {
    const wait = url.searchParams.has("wait") ? parseDuration(url.searchParams.get("wait")) : 0;
    if (wait === null || wait > 60_000) throw invalid("wait must be a duration between 0s and 1m0s, like 10s");
    if (wait === 0 || TERMINAL.has(t.state)) return { status: 200, json: this.wire(t) };
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.taskWaiters.get(t.id)?.delete(done);
        resolve({ status: 200, json: this.wire(t) });
      };
      const timer = setTimeout(done, wait);
      if (!this.taskWaiters.has(t.id)) this.taskWaiters.set(t.id, new Set());
      this.taskWaiters.get(t.id).add(done);
    });
  }

  cancel(t) {
    if (!TERMINAL.has(t.state)) this.end(t, "cancelled", { code: "cancelled", message: "cancelled by a client" }, "cancelled");
    return this.wire(t);
  }

  /** A terminal task (not succeeded) queued again: attempts renewed, its timeout counted from now. */
  retry(t) {
    if (!RETRYABLE.has(t.state)) throw new HttpError(409, "not_retryable", `a ${t.state} task cannot be retried`);
    const from = t.state;
    Object.assign(t, { state: "queued", attempt: 0, result: null, error: null, finished_at: null, run_at: null });
    t.deadline_at = new Date(Date.now() + t.timeoutMs).toISOString();
    t.deadlineTimer = setTimeout(() => this.deadline(t), t.timeoutMs);
    t.deadlineTimer.unref();
    this.event(t, from, "queued", "retried");
    this.enqueue(t, 0);
    return this.wire(t);
  }

  // --- state machine --------------------------------------------------------

  event(t, from, to, code) {
    const e = { id: ++this.eventSeq, task_id: t.id, from, to, epoch: t.epoch, at: new Date().toISOString() };
    if (code) e.code = code;
    t.events.push(e);
    this.emit("task", t);
    if (TERMINAL.has(to)) {
      clearTimeout(t.deadlineTimer);
      const ws = this.taskWaiters.get(t.id);
      if (ws) for (const w of [...ws]) w();
    }
  }

  enqueue(t, delayMs) {
    const push = () => {
      if (t.state !== "queued") return;
      const k = `${t.tenant}\0${t.workflow}\0${t.pool}`;
      if (!this.queues.has(k)) this.queues.set(k, new Fifo());
      this.queues.get(k).push(t.id);
      this.scheduleWake();
    };
    if (delayMs > 0) setTimeout(push, delayMs).unref();
    else push();
  }

  /** Ends a task (cancelled, timed_out, failed, succeeded); a running one's lease is fenced. */
  end(t, state, error, code) {
    const from = t.state;
    if (from === "running") {
      this.running.delete(t.id);
      if (state === "cancelled" || state === "timed_out") {
        t.endedFromEpoch = t.epoch;
        t.epoch++;
      }
    } else if (state === "cancelled" || state === "timed_out") {
      t.epoch++;
    }
    t.state = state;
    t.error = error;
    t.finished_at = new Date().toISOString();
    this.event(t, from, state, code);
  }

  /** A running task back to queued after delayMs; the attempt its claim counted stays charged or is given back. */
  requeue(t, { charge, delayMs, code }) {
    this.running.delete(t.id);
    t.epoch++;
    if (!charge) t.attempt--;
    t.state = "queued";
    t.run_at = delayMs > 0 ? new Date(Date.now() + delayMs).toISOString() : t.run_at;
    this.event(t, "running", "queued", code);
    this.enqueue(t, delayMs);
  }

  deadline(t) {
    if (TERMINAL.has(t.state)) return;
    this.end(t, "timed_out", { code: "deadline_exceeded", message: "the task's deadline passed" }, "deadline_exceeded");
  }

  recover() {
    const now = Date.now();
    for (const id of [...this.running]) {
      const t = this.tasks.get(id);
      if (!t || t.leaseExpiresAt > now) continue;
      if (t.attempt < t.max_attempts) this.requeue(t, { charge: true, delayMs: 0, code: "lease_lost" });
      else {
        t.epoch++;
        this.end(t, "failed", { code: "lease_lost", message: "the lease expired and no attempt is left" }, "lease_lost");
      }
    }
  }

  // --- worker protocol ------------------------------------------------------

  token(t, p) {
    const head = Buffer.from(`${t.id}.${t.epoch}`).toString("base64url");
    const mac = crypto.createHmac("sha256", this.secret).update(`${head}.${p.id}`).digest("base64url").slice(0, 22);
    return `dkl1.${head}.${mac}`;
  }

  /** [status, task] of a lease token presented by principal p. */
  leaseStatus(token, p) {
    const m = typeof token === "string" ? /^dkl1\.([\w-]+)\.([\w-]+)$/.exec(token) : null;
    if (!m) return ["lease_lost", null, -1];
    const mac = crypto.createHmac("sha256", this.secret).update(`${m[1]}.${p.id}`).digest("base64url").slice(0, 22);
    if (mac !== m[2]) return ["lease_lost", null, -1];
    const [id, epochText] = Buffer.from(m[1], "base64url").toString().split(".");
    const epoch = Number(epochText);
    const t = this.tasks.get(id);
    if (!t) return ["lease_lost", null, epoch];
    if (t.state === "running" && t.epoch === epoch) return ["ok", t, epoch];
    if ((t.state === "cancelled" || t.state === "timed_out") && t.endedFromEpoch === epoch) return [t.state, t, epoch];
    return ["lease_lost", t, epoch];
  }

  seeWorker(p, id, fields = {}) {
    const wid = id ?? p.id;
    const w = this.workers.get(wid) ?? { id: wid, key_id: p.id, tenant: p.tenant, all_tenants: !!p.all_tenants, workflows: [], slots: 0, leases: 0, sdk: "" };
    Object.assign(w, fields, { last_seen_at: new Date().toISOString() });
    this.workers.set(wid, w);
  }

  claim(body, p, res) {
    checkFields(body, ["workflows", "pool", "max", "wait_ms", "worker_id", "slots", "sdk"], "the request body");
    const wfs = body.workflows;
    if (!Array.isArray(wfs) || wfs.length < 1 || wfs.length > 100) throw invalid("workflows: 1 to 100 names");
    for (const w of wfs) {
      const wf = this.workflows.get(w);
      if (!wf || !wf.remote) throw new HttpError(400, "unknown_workflow", "not a registered remote workflow");
    }
    if (body.pool !== undefined && body.pool !== "online" && body.pool !== "offline") throw invalid("pool must be online or offline");
    const max = intIn(body.max, 1, 1000, "max", 1);
    const waitMs = intIn(body.wait_ms, 0, 60_000, "wait_ms", 0);
    if (body.worker_id !== undefined && (typeof body.worker_id !== "string" || body.worker_id.length > 128 || !VISIBLE.test(body.worker_id))) {
      throw invalid("worker_id: 1 to 128 visible ASCII");
    }
    if (body.slots !== undefined) intIn(body.slots, 1, 1_000_000, "slots");
    if (body.sdk !== undefined && (typeof body.sdk !== "string" || body.sdk.length > 64 || !VISIBLE.test(body.sdk))) throw invalid("sdk: at most 64 visible ASCII");
    this.seeWorker(p, body.worker_id, { workflows: wfs, slots: body.slots ?? 0, sdk: body.sdk ?? "" });
    const req = { p, wfs, pool: body.pool, max };
    const now = this.claimNow(req);
    if (now.length > 0 || waitMs === 0) return this.claimAnswer(now);
    return new Promise((resolve) => {
      const w = {
        req,
        finish: (tasks) => {
          clearTimeout(w.timer);
          this.claimWaiters.delete(w);
          resolve(tasks === null ? undefined : this.claimAnswer(tasks));
        },
      };
      w.timer = setTimeout(() => w.finish([]), waitMs);
      res.on("close", () => {
        if (!res.writableFinished && this.claimWaiters.has(w)) w.finish(null);
      });
      this.claimWaiters.add(w);
      this.emit("claim_wait", w);
    });
  }

  claimAnswer(tasks) {
    return { status: 200, json: { tasks, lease_ttl_ms: this.leaseTtlMs, heartbeat_ms: this.heartbeatMs } };
  }

  claimNow({ p, wfs, pool, max }) {
    const out = [];
    const tenants = p.all_tenants ? [...new Set([...this.queues.keys()].map((k) => k.split("\0")[0]))] : [p.tenant];
    const pools = pool ? [pool] : ["online", "offline"];
    const now = Date.now();
    for (const tenant of tenants) {
      for (const wf of wfs) {
        for (const pl of pools) {
          const q = this.queues.get(`${tenant}\0${wf}\0${pl}`);
          while (q && q.length > 0 && out.length < max) {
            const t = this.tasks.get(q.shift());
            if (!t || t.state !== "queued") continue;
            t.state = "running";
            t.epoch++;
            t.attempt++;
            t.started_at = new Date(now).toISOString();
            t.leaseExpiresAt = now + this.leaseTtlMs;
            t.leaseKeyId = p.id;
            this.running.add(t.id);
            this.event(t, "queued", "running", "");
            // The task span's traceparent, in the task's trace, as the
            // real server hands it over (the span ID is the fake's own).
            const span = crypto.createHash("sha256").update(t.id).digest("hex").slice(0, 16);
            out.push({ lease: this.token(t, p), task: this.wire(t), input: t.input, traceparent: `00-${t.trace_id}-${span}-01` });
          }
        }
      }
    }
    return out;
  }

  scheduleWake() {
    if (this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      for (const w of [...this.claimWaiters]) {
        const tasks = this.claimNow(w.req);
        if (tasks.length > 0) w.finish(tasks);
      }
    });
  }

  heartbeat(body, p) {
    checkFields(body, ["leases", "worker_id"], "the request body");
    if (!Array.isArray(body.leases) || body.leases.length < 1 || body.leases.length > 10_000) throw invalid("leases: 1 to 10000");
    this.seeWorker(p, body.worker_id, { leases: body.leases.length });
    const now = Date.now();
    const leases = body.leases.map((lease) => {
      const [status, t] = this.leaseStatus(lease, p);
      if (status === "ok") t.leaseExpiresAt = now + this.leaseTtlMs;
      return { lease, status };
    });
    return { status: 200, json: { leases } };
  }

  finish(body, p) {
    checkFields(body, ["items"], "the request body");
    if (!Array.isArray(body.items) || body.items.length < 1 || body.items.length > 1000) throw invalid("items: 1 to 1000");
    for (const it of body.items) {
      if (it?.outcome === "succeeded") checkFields(it, ["lease", "outcome", "result"], "an item");
      else if (it?.outcome === "failed") {
        checkFields(it, ["lease", "outcome", "error"], "an item");
        checkFields(it.error, ["code", "message", "retryable"], "an item's error");
        if (typeof it.error.code !== "string") throw invalid("error.code is required");
        if (it.error.message !== undefined && (typeof it.error.message !== "string" || Buffer.byteLength(it.error.message) > 1024)) {
          throw invalid("error.message: at most 1024 bytes");
        }
      } else throw invalid("outcome must be succeeded or failed");
    }
    const items = body.items.map((it) => {
      const [status, t, epoch] = this.leaseStatus(it.lease, p);
      const { lease, ...outcome } = it;
      const canonical = JSON.stringify(outcome);
      if (status !== "ok") {
        const prior = t?.finishes.get(epoch);
        if (prior !== undefined) return { lease, status: prior === canonical ? "ok" : "conflict" };
        return { lease, status: "lease_lost" };
      }
      t.finishes.set(epoch, canonical);
      if (it.outcome === "succeeded") {
        this.running.delete(t.id);
        t.result = it.result === undefined ? null : it.result;
        this.end(t, "succeeded", null, "");
      } else {
        const code = CODE.test(it.error.code) ? it.error.code : "workflow_error";
        if (it.error.retryable && t.attempt < t.max_attempts) {
          t.error = { code, message: it.error.message ?? "" };
          this.requeue(t, { charge: true, delayMs: this.retryDelayMs, code });
        } else {
          this.running.delete(t.id);
          this.end(t, "failed", { code, message: it.error.message ?? "" }, code);
        }
      }
      return { lease, status: "ok" };
    });
    return { status: 200, json: { items } };
  }

  addEvidence(body, p) {
    checkFields(body, ["items"], "the request body");
    if (!Array.isArray(body.items) || body.items.length < 1 || body.items.length > 1000) throw invalid("items: 1 to 1000");
    for (const it of body.items) {
      checkFields(it, ["lease", "kind", "body"], "an item");
      if (typeof it.kind !== "string" || it.kind === "") throw invalid("kind is required");
    }
    const items = body.items.map((it) => {
      const [status, t, epoch] = this.leaseStatus(it.lease, p);
      if (status !== "ok") return { lease: it.lease, status: "lease_lost" };
      t.evidence.push({
        id: ++this.evidenceSeq,
        task_id: t.id,
        attempt: t.attempt,
        epoch,
        kind: it.kind,
        body: it.body ?? null,
        created_at: new Date().toISOString(),
      });
      return { lease: it.lease, status: "ok" };
    });
    return { status: 200, json: { items } };
  }

  release(body, p) {
    checkFields(body, ["leases"], "the request body");
    if (!Array.isArray(body.leases) || body.leases.length < 1 || body.leases.length > 10_000) throw invalid("leases: 1 to 10000");
    const leases = body.leases.map((lease) => {
      const [status, t] = this.leaseStatus(lease, p);
      if (status !== "ok") return { lease, status: "lease_lost" };
      this.requeue(t, { charge: false, delayMs: 0, code: "shutdown" });
      return { lease, status: "ok" };
    });
    return { status: 200, json: { leases } };
  }
}

/** Starts a fake server on a loopback port. */
export async function startFakeDocket(options = {}) {
  const f = new FakeDocket(options);
  await f.listen(options.port ?? 0);
  return f;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const flag = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : dflt;
  };
  const fake = await startFakeDocket({
    port: flag("--port", 0),
    leaseTtlMs: flag("--lease-ttl-ms", 30_000),
    heartbeatMs: flag("--heartbeat-ms", 1_000),
    recordCalls: false,
  });
  console.log(JSON.stringify({ url: fake.url, admin_key: fake.adminKey }));
  const stop = () => fake.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
