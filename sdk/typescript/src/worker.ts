import { hostname } from "node:os";
import { jitter, RetryPolicy, sleep, unref } from "./backoff.js";
import { BatchSender } from "./batch_sender.js";
import { DocketError } from "./docket_error.js";
import { HeldLease } from "./held_lease.js";
import { Heartbeater, type LostCode } from "./heartbeater.js";
import { HttpTransport, type FetchFunction } from "./http_transport.js";
import { errorsLogger, type Logger } from "./logger.js";
import { taskFromClaim, type Pool, type Task, type WireTask } from "./task.js";
import type { AbortCode } from "./task_aborted_error.js";
import { TaskFailure } from "./task_failure.js";
import { SDK_NAME } from "./version.js";

export interface WorkerOptions {
  /** The server, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** A worker key (role `worker`). */
  key: string;
  /** How many handlers run at once. */
  slots: number;
  /** Claim only from this pool; default both. */
  pool?: Pool;
  /** Names this process to operators (1–128 visible ASCII); default `<hostname>/pid-<pid>`. */
  workerId?: string;
  /** Long-poll of a claim while there is nothing to run, 0–60,000 ms; default 20,000. */
  waitMs?: number;
  /** How long stop() lets running handlers finish before aborting them; default 10,000 ms. */
  shutdownGraceMs?: number;
  /** Where errors are reported (codes only); default: errors with console.warn. */
  logger?: Logger;
  /** The fetch function to call; default the global fetch. */
  fetch?: FetchFunction;
}

/** What a handler gets beside its task. */
export interface TaskContext {
  /**
   * Aborted when the task is cancelled, times out, loses its lease, or the
   * worker shuts down past its grace; `signal.reason` is a TaskAbortedError
   * whose `code` says which. Pass it on (`fetch(url, { signal })`) or check
   * it; a result returned after it aborted is dropped, never sent.
   */
  readonly signal: AbortSignal;
  /**
   * Records an evidence item under the task's current attempt. Resolves once
   * the server has stored it; rejects with the signal's reason when the
   * lease is gone. The task's outcome is sent only after its evidence.
   */
  evidence(kind: string, body: unknown): Promise<void>;
  /**
   * The outcome of each task this one depends on (`depends_on` at
   * submission), in the order given: fan-in. The task runs only once every
   * dependency succeeded, unless it was submitted with
   * `on_dependency_failure: "run"`. Empty for a task without dependencies.
   * Rejects with a DocketError `lease_lost` when the server refuses the
   * lease.
   */
  dependencyResults(): Promise<DependencyResult[]>;
}

/** The outcome of one task another depends on. */
export interface DependencyResult {
  readonly id: string;
  readonly state: string;
  readonly result: unknown;
  readonly error: { code: string; message?: string } | null;
}

/**
 * Runs one task. Its return value (JSON) is the task's result; throwing a
 * TaskFailure fails the task with its code; any other error fails it,
 * retryable, with code `workflow_error`.
 */
export type Handler<I = unknown, R = unknown> = (task: Task<I>, ctx: TaskContext) => R | Promise<R>;

export interface RunOptions {
  /**
   * Install SIGINT and SIGTERM handlers that stop the worker gracefully
   * while run() is active. A second signal during the stop gives the
   * process its default action (exit).
   */
  signals?: boolean;
}

/** Counters of a worker since it started. */
export interface WorkerStats {
  readonly slots: number;
  /** Handlers that have not returned, including aborted ones that ignore their signal. */
  readonly running: number;
  /** Leases held: running handlers, and outcomes not yet answered. */
  readonly held: number;
  readonly claimed: number;
  /** Outcomes the server took (`ok`): successes and failures. */
  readonly succeeded: number;
  readonly failed: number;
  /** Outcomes the server refused (`lease_lost`, `conflict`) or that could not be sent. */
  readonly refused: number;
  /** Results dropped because the task had been aborted first. */
  readonly dropped: number;
  /** Leases handed back at shutdown. */
  readonly released: number;
  readonly aborted: Readonly<Record<AbortCode, number>>;
  /** Heartbeat calls sent. */
  readonly heartbeats: number;
}

interface ClaimAnswer {
  tasks?: Array<{ lease: string; task: WireTask; input: unknown; traceparent?: string }>;
  lease_ttl_ms?: number;
  heartbeat_ms?: number;
}

type WorkerState = "new" | "running" | "stopping" | "stopped";

const MAX_CLAIM = 1_000;
const MAX_WORKFLOWS = 100;
const RELEASE_CHUNK = 1_000;
/** Pause after a claim that returned fewer tasks than asked, spread ±50 %. */
const THIN_CLAIM_PAUSE_MS = 20;
/** Pause after an empty claim when waitMs is 0 (no long poll), spread ±50 %. */
const IDLE_POLL_MS = 1_000;
/** After an abort, how long a handler may ignore its signal before it is reported. */
const IGNORED_ABORT_REPORT_MS = 10_000;
const MAX_MESSAGE_BYTES = 1_024;
const CODE_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;
const encoder = new TextEncoder();

/**
 * A remote worker: claims tasks of the workflows it has handlers for, runs
 * them in at most `slots` handlers at once, heartbeats their leases with
 * one call per interval, and sends their outcomes in batches.
 *
 * ```ts
 * const worker = new Worker({ url, key, slots: 8 });
 * worker.handle("images.resize", async (task, { signal }) => resize(task.input, signal));
 * await worker.run({ signals: true }); // until stop(), SIGINT or SIGTERM
 * ```
 *
 * A handler whose task is aborted (cancelled, timed out, lease lost,
 * shutdown) sees its signal abort; its result is dropped. JavaScript cannot
 * stop a handler that ignores its signal: its slot stays taken until it
 * returns, so that the worker never runs more than `slots` handlers at once.
 */
export class Worker {
  private readonly transport: HttpTransport;
  private readonly slots: number;
  private readonly pool: Pool | undefined;
  private readonly waitMs: number;
  private readonly shutdownGraceMs: number;
  private readonly logger: Logger;
  /** The worker_id this worker sends. */
  readonly workerId: string;

  private readonly handlers = new Map<string, Handler>();
  private readonly leases = new Map<string, HeldLease>();
  private readonly heartbeater: Heartbeater;
  private readonly finishes: BatchSender;
  private readonly evidenceSender: BatchSender;
  private readonly claimRetry = new RetryPolicy({ baseMs: 100, maxMs: 10_000 });
  private readonly stopController = new AbortController();

  private state: WorkerState = "new";
  private started = false;
  /** Aborted handlers not yet returned: reported if they ignore the abort too long. */
  private readonly ignoredAbortTimers = new Map<HeldLease, ReturnType<typeof setTimeout>>();
  private busy = 0;
  private slotWaiters: Array<() => void> = [];
  private drainWaiters: Array<() => void> = [];
  /** Outcomes waiting for their task's evidence before they are sent. */
  private readonly preparing = new Set<Promise<void>>();
  private claimAbort: AbortController | undefined;
  private fatal: unknown;
  private resolveDone!: () => void;
  private readonly done = new Promise<void>((resolve) => (this.resolveDone = resolve));
  private counts = {
    claimed: 0,
    succeeded: 0,
    failed: 0,
    refused: 0,
    dropped: 0,
    released: 0,
    aborted: { cancelled: 0, timed_out: 0, lease_lost: 0, shutdown: 0 } as Record<AbortCode, number>,
  };

  constructor(options: WorkerOptions) {
    if (!Number.isInteger(options.slots) || options.slots < 1) {
      throw new RangeError("docket: Worker: slots must be a positive integer");
    }
    const waitMs = options.waitMs ?? 20_000;
    if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > 60_000) {
      throw new RangeError("docket: Worker: waitMs must be an integer from 0 to 60000");
    }
    const grace = options.shutdownGraceMs ?? 10_000;
    if (!(grace >= 0)) throw new RangeError("docket: Worker: shutdownGraceMs must be 0 or more");
    if (options.pool !== undefined && options.pool !== "online" && options.pool !== "offline") {
      throw new RangeError('docket: Worker: pool must be "online" or "offline"');
    }
    this.workerId = options.workerId ?? defaultWorkerId();
    if (!/^[\x21-\x7e]{1,128}$/.test(this.workerId)) {
      throw new RangeError("docket: Worker: workerId must be 1 to 128 visible ASCII characters");
    }
    this.transport = new HttpTransport({ url: options.url, key: options.key, fetch: options.fetch });
    this.slots = options.slots;
    this.pool = options.pool;
    this.waitMs = waitMs;
    this.shutdownGraceMs = grace;
    this.logger = options.logger ?? errorsLogger;
    this.heartbeater = new Heartbeater({
      transport: this.transport,
      workerId: this.workerId,
      leases: this.leases,
      onLost: (lease, code) => this.lose(lease, code),
      onFatal: (err) => this.failWith(err),
      logger: this.logger,
    });
    this.finishes = new BatchSender({
      transport: this.transport,
      path: "/v1/worker/finish",
      event: "finish_failed",
      logger: this.logger,
    });
    this.evidenceSender = new BatchSender({
      transport: this.transport,
      path: "/v1/worker/evidence",
      event: "evidence_failed",
      logger: this.logger,
    });
  }

  /** Registers the handler of a workflow (a registered remote workflow name). */
  handle<I = unknown, R = unknown>(workflow: string, handler: Handler<I, R>): this {
    if (typeof workflow !== "string" || workflow === "") throw new TypeError("docket: handle: a workflow name is required");
    if (typeof handler !== "function") throw new TypeError("docket: handle: the handler must be a function");
    if (this.handlers.has(workflow)) throw new Error(`docket: handle: ${workflow} already has a handler`);
    if (this.handlers.size >= MAX_WORKFLOWS) throw new RangeError(`docket: handle: at most ${MAX_WORKFLOWS} workflows`);
    this.handlers.set(workflow, handler as Handler<unknown, unknown>);
    return this;
  }

  /**
   * Claims and runs tasks until stop() (or a signal, with `signals: true`);
   * resolves once the shutdown is complete. Rejects, after shutting down,
   * when the server refuses the worker itself (a bad key, a workflow that is
   * not registered: 4xx other than 408 and 429).
   */
  async run(options: RunOptions = {}): Promise<void> {
    if (this.state === "stopped" && !this.started) return;
    if (this.state !== "new") throw new Error("docket: Worker.run: the worker has already run");
    if (this.handlers.size === 0) throw new Error("docket: Worker.run: no handler registered");
    this.started = true;
    this.state = "running";
    const removeSignals = options.signals ? this.installSignals() : () => {};
    this.heartbeater.start();
    try {
      await this.claimLoop();
    } catch (err) {
      this.fatal ??= err;
    }
    try {
      await this.shutdown();
    } finally {
      removeSignals();
      this.state = "stopped";
      this.resolveDone();
    }
    if (this.fatal !== undefined) throw this.fatal;
  }

  /**
   * Stops gracefully: no new claims; running handlers have shutdownGraceMs
   * to return (their leases are heartbeated meanwhile); the rest are aborted
   * with `shutdown` and their leases released (queued again, attempt not
   * charged); every outcome is flushed. Resolves when that is done (as run()
   * does). Idempotent.
   */
  stop(): Promise<void> {
    if (this.state === "new") {
      this.state = "stopped";
      this.resolveDone();
    } else if (this.state === "running") {
      this.state = "stopping";
      this.stopController.abort();
      this.claimAbort?.abort();
      this.wakeSlotWaiters();
    }
    return this.done;
  }

  /** A snapshot of the worker's counters. */
  stats(): WorkerStats {
    return {
      slots: this.slots,
      running: this.busy,
      held: this.leases.size,
      claimed: this.counts.claimed,
      succeeded: this.counts.succeeded,
      failed: this.counts.failed,
      refused: this.counts.refused,
      dropped: this.counts.dropped,
      released: this.counts.released,
      aborted: { ...this.counts.aborted },
      heartbeats: this.heartbeater.calls,
    };
  }

  // --- claiming -----------------------------------------------------------

  private async claimLoop(): Promise<void> {
    while (this.state === "running") {
      const free = Math.min(this.slots - this.busy, MAX_CLAIM);
      if (free <= 0) {
        await this.waitForSlot();
        continue;
      }
      let answer: ClaimAnswer;
      let receivedAt: number;
      try {
        answer = await this.claim(free);
        receivedAt = Date.now();
      } catch (err) {
        if (this.state !== "running") return;
        if (err instanceof DocketError && !err.transient) {
          this.logger.error("claim_refused", { code: err.code, status: err.status });
          throw err;
        }
        const de = err instanceof DocketError ? err : undefined;
        this.logger.warn("claim_failed", { code: de?.code ?? "network_error", status: de?.status ?? 0 });
        await sleep(this.claimRetry.delayFor(err), this.stopController.signal);
        continue;
      }
      this.claimRetry.reset();
      this.heartbeater.setTiming(answer.heartbeat_ms, answer.lease_ttl_ms);
      const tasks = Array.isArray(answer.tasks) ? answer.tasks : [];
      if (this.state !== "running") {
        // Claimed while stopping: hand them back unrun.
        await this.release(tasks.map((t) => t.lease));
        return;
      }
      for (const t of tasks) this.start(t.lease, t.task, t.input, t.traceparent ?? "", receivedAt);
      if (tasks.length > 0) this.heartbeater.soon();
      if (tasks.length === 0 && this.waitMs === 0) {
        // No long poll: poll about once a second while there is nothing.
        await sleep(jitter(IDLE_POLL_MS), this.stopController.signal);
      } else if (tasks.length < free) {
        await sleep(jitter(THIN_CLAIM_PAUSE_MS), this.stopController.signal);
      }
    }
  }

  private async claim(max: number): Promise<ClaimAnswer> {
    const body: Record<string, unknown> = { workflows: [...this.handlers.keys()] };
    if (this.pool) body.pool = this.pool;
    body.max = max;
    body.wait_ms = this.waitMs;
    body.worker_id = this.workerId;
    body.slots = this.slots;
    body.sdk = SDK_NAME;
    // stop() aborts a claim only while it waits for its answer: once the
    // answer has started to arrive it is read, and its tasks are released.
    const controller = new AbortController();
    this.claimAbort = controller;
    try {
      const res = await this.transport.request<ClaimAnswer>({
        method: "POST",
        path: "/v1/worker/claim",
        body: JSON.stringify(body),
        timeoutMs: this.waitMs + 15_000,
        signal: controller.signal,
        onHeaders: () => {
          this.claimAbort = undefined;
        },
      });
      return res.data ?? {};
    } finally {
      this.claimAbort = undefined;
    }
  }

  private waitForSlot(): Promise<void> {
    if (this.busy < this.slots || this.state !== "running") return Promise.resolve();
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  private wakeSlotWaiters(): void {
    const waiters = this.slotWaiters;
    this.slotWaiters = [];
    for (const w of waiters) w();
  }

  // --- running ------------------------------------------------------------

  private start(token: string, wire: WireTask, input: unknown, traceparent: string, receivedAt: number): void {
    const task = taskFromClaim(wire, input, traceparent);
    const lease = new HeldLease(token, task, localDeadline(wire, receivedAt), receivedAt);
    this.leases.set(token, lease);
    this.counts.claimed++;
    const handler = this.handlers.get(task.workflow);
    if (!handler) {
      // Not claimed by name (the server sends only the workflows asked for).
      lease.phase = "finishing";
      this.send(lease, failedJson(token, "workflow_error", "no handler for this workflow", false), false);
      return;
    }
    this.busy++;
    lease.armDeadline(() => this.lose(lease, "timed_out"));
    const ctx: TaskContext = {
      signal: lease.signal,
      evidence: (kind, body) => this.evidence(lease, kind, body),
      dependencyResults: () => this.dependencyResults(lease),
    };
    let result: Promise<unknown>;
    if (lease.aborted) {
      result = Promise.resolve(undefined); // its deadline had passed: dropped below
    } else {
      try {
        result = Promise.resolve(handler(task, ctx));
      } catch (err) {
        result = Promise.reject(err);
      }
    }
    result.then(
      (value) => this.complete(lease, true, value),
      (err: unknown) => this.complete(lease, false, err),
    );
  }

  private complete(lease: HeldLease, ok: boolean, value: unknown): void {
    this.busy--;
    this.wakeSlotWaiters();
    lease.disarm();
    clearTimeout(this.ignoredAbortTimers.get(lease));
    this.ignoredAbortTimers.delete(lease);
    if (lease.aborted || lease.phase !== "running") {
      this.counts.dropped++;
      return;
    }
    lease.phase = "finishing";
    const [json, success] = ok ? succeededJson(lease.token, value) : [this.failureJson(lease, value), false];
    if (lease.evidence.size === 0) {
      this.send(lease, json, success);
    } else {
      const p = Promise.allSettled([...lease.evidence]).then(() => this.send(lease, json, success));
      this.preparing.add(p);
      void p.finally(() => this.preparing.delete(p));
    }
    this.leftRunning();
  }

  private failureJson(lease: HeldLease, err: unknown): string {
    if (isTaskFailure(err)) {
      return failedJson(lease.token, err.code, err.message, err.retryable);
    }
    const name = errorName(err);
    this.logger.warn("handler_error", { code: "workflow_error", error_name: name, task_id: lease.task.id });
    return failedJson(lease.token, "workflow_error", name, true);
  }

  private send(lease: HeldLease, json: string, success: boolean): void {
    this.finishes.send({ lease: lease.token, json }).then(
      (status) => {
        lease.phase = "done";
        this.leases.delete(lease.token);
        if (status === "ok") {
          if (success) this.counts.succeeded++;
          else this.counts.failed++;
        } else {
          this.counts.refused++;
          this.logger.warn("finish_refused", { code: status, task_id: lease.task.id });
        }
      },
      (err: unknown) => {
        if (err instanceof DocketError && err.status === 413 && success) {
          // The result alone is over the server's body limit.
          this.send(lease, failedJson(lease.token, "result_too_large", "the result is over the server's limit", false), false);
          return;
        }
        lease.phase = "done";
        this.leases.delete(lease.token);
        this.counts.refused++;
        if (err instanceof DocketError && err.code === "abandoned") {
          this.logger.error("finish_abandoned", { task_id: lease.task.id });
        }
      },
    );
  }

  private async dependencyResults(lease: HeldLease): Promise<DependencyResult[]> {
    const retry = new RetryPolicy({ baseMs: 100, maxMs: 2_000 });
    for (let attempt = 1; ; attempt++) {
      if (lease.aborted) throw lease.signal.reason;
      try {
        const res = await this.transport.request<{ status?: string; dependencies?: DependencyResult[] }>({
          method: "POST",
          path: "/v1/worker/dependencies",
          body: JSON.stringify({ lease: lease.token }),
          timeoutMs: 10_000,
        });
        const status = res.data?.status;
        if (status === "ok" && Array.isArray(res.data?.dependencies)) return res.data.dependencies;
        throw new DocketError(status ?? "http_error", `docket: dependencies: ${status ?? "no answer"}`);
      } catch (err) {
        const de = err instanceof DocketError ? err : undefined;
        if ((de && !de.transient) || attempt >= 4) throw err;
        await sleep(retry.delayFor(err));
      }
    }
  }

  private evidence(lease: HeldLease, kind: string, body: unknown): Promise<void> {
    if (lease.aborted) return Promise.reject(lease.signal.reason);
    if (lease.phase !== "running") {
      return Promise.reject(new Error("docket: evidence: the handler has already returned"));
    }
    let json: string;
    try {
      json = JSON.stringify({ lease: lease.token, kind, body: body === undefined ? null : body });
    } catch (err) {
      return Promise.reject(err);
    }
    const p = this.evidenceSender.send({ lease: lease.token, json }).then((status) => {
      if (status === "ok") return;
      this.lose(lease, "lease_lost");
      throw lease.aborted ? lease.signal.reason : new DocketError(status, `docket: evidence: ${status}`);
    });
    lease.evidence.add(p);
    p.then(
      () => lease.evidence.delete(p),
      () => lease.evidence.delete(p),
    );
    return p;
  }

  /** Aborts a running lease and stops holding it (no heartbeat, no outcome). */
  private lose(lease: HeldLease, code: LostCode | "shutdown"): void {
    if (!lease.abort(code)) return;
    this.leases.delete(lease.token);
    this.counts.aborted[code]++;
    const timer = setTimeout(() => {
      this.ignoredAbortTimers.delete(lease);
      this.logger.warn("handler_ignores_abort", { code, task_id: lease.task.id });
    }, IGNORED_ABORT_REPORT_MS);
    unref(timer);
    this.ignoredAbortTimers.set(lease, timer);
    this.leftRunning();
  }

  private failWith(err: unknown): void {
    this.fatal ??= err;
    void this.stop();
  }

  // --- shutdown -----------------------------------------------------------

  /** A lease left `running` (returned or aborted): wake the shutdown when none is left. */
  private leftRunning(): void {
    if (this.drainWaiters.length === 0 || this.liveCount() > 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  private liveCount(): number {
    let n = 0;
    for (const l of this.leases.values()) if (l.phase === "running" && !l.aborted) n++;
    return n;
  }

  private async shutdown(): Promise<void> {
    this.state = "stopping";
    this.stopController.abort();
    this.claimAbort?.abort();
    if (this.liveCount() > 0 && this.shutdownGraceMs > 0) {
      const drained = new Promise<void>((resolve) => this.drainWaiters.push(resolve));
      await Promise.race([drained, sleep(this.shutdownGraceMs)]);
    }
    const left = [...this.leases.values()].filter((l) => l.phase === "running" && !l.aborted);
    for (const l of left) this.lose(l, "shutdown");
    await this.release(left.map((l) => l.token));
    // Evidence first: an outcome leaves only after its task's evidence.
    const flushEnd = Date.now() + Math.max(5_000, this.shutdownGraceMs);
    let abandoned = await this.evidenceSender.drain(flushEnd - Date.now());
    await Promise.allSettled([...this.preparing]);
    abandoned += await this.finishes.drain(Math.max(0, flushEnd - Date.now()));
    if (abandoned > 0) this.logger.error("flush_abandoned", { count: abandoned });
    await this.heartbeater.stop();
  }

  /** Hands leases back: queued again at once, attempt not charged. */
  private async release(tokens: string[]): Promise<void> {
    const retry = new RetryPolicy({ baseMs: 100, maxMs: 1_000 });
    for (let i = 0; i < tokens.length; i += RELEASE_CHUNK) {
      const chunk = tokens.slice(i, i + RELEASE_CHUNK);
      for (let attempt = 1; ; attempt++) {
        try {
          const res = await this.transport.request<{ leases?: Array<{ status?: string }> }>({
            method: "POST",
            path: "/v1/worker/release",
            body: JSON.stringify({ leases: chunk }),
            timeoutMs: 10_000,
          });
          const items = Array.isArray(res.data?.leases) ? res.data.leases : [];
          this.counts.released += items.filter((it) => it.status === "ok").length;
          break;
        } catch (err) {
          const de = err instanceof DocketError ? err : undefined;
          if ((de && !de.transient) || attempt >= 4) {
            // The server recovers these leases after their TTL.
            this.logger.error("release_failed", { code: de?.code ?? "network_error", count: chunk.length });
            break;
          }
          this.logger.warn("release_failed", { code: de?.code ?? "network_error", count: chunk.length });
          await sleep(retry.delayFor(err));
        }
      }
    }
  }

  private installSignals(): () => void {
    const onSignal = (signal: "SIGINT" | "SIGTERM"): void => {
      if (this.state === "running") {
        void this.stop();
        return;
      }
      // A second signal while stopping: the default action.
      remove();
      process.kill(process.pid, signal);
    };
    const remove = (): void => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    return remove;
  }
}

function defaultWorkerId(): string {
  let host = "host";
  try {
    host = hostname().replace(/[^\x21-\x7e]/g, "") || "host";
  } catch {
    // keep "host"
  }
  return `${host}/pid-${process.pid}`.slice(0, 128);
}

/**
 * The task's deadline on the local clock: the claim's arrival plus the time
 * the server gave the attempt (deadline_at − started_at), immune to a skew
 * between the two clocks; deadline_at itself without started_at.
 */
function localDeadline(w: WireTask, receivedAt: number): number {
  const deadline = Date.parse(w.deadline_at);
  if (Number.isNaN(deadline)) return Number.POSITIVE_INFINITY;
  const started = w.started_at ? Date.parse(w.started_at) : Number.NaN;
  return Number.isNaN(started) ? deadline : receivedAt + (deadline - started);
}

function succeededJson(lease: string, value: unknown): [string, boolean] {
  try {
    return [JSON.stringify({ lease, outcome: "succeeded", result: value === undefined ? null : value }), true];
  } catch (err) {
    // Not JSON (a BigInt, a cycle): fails like any other error.
    return [failedJson(lease, "workflow_error", errorName(err), true), false];
  }
}

function failedJson(lease: string, code: string, message: string, retryable: boolean): string {
  return JSON.stringify({
    lease,
    outcome: "failed",
    error: { code: CODE_PATTERN.test(code) ? code : "workflow_error", message: cut(String(message), MAX_MESSAGE_BYTES), retryable },
  });
}

/** s cut to at most max UTF-8 bytes, on a character boundary. */
function cut(s: string, max: number): string {
  if (s.length * 3 <= max) return s;
  const bytes = encoder.encode(s);
  if (bytes.length <= max) return s;
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

function isTaskFailure(err: unknown): err is TaskFailure {
  if (err instanceof TaskFailure) return true;
  // A TaskFailure of another copy of this package.
  const e = err as { name?: unknown; code?: unknown; retryable?: unknown; message?: unknown } | null;
  return (
    typeof e === "object" && e !== null && e.name === "TaskFailure" && typeof e.code === "string" && typeof e.retryable === "boolean"
  );
}

/** A name for what a handler threw that says nothing of its content. */
function errorName(err: unknown): string {
  const name = (err as { name?: unknown } | null)?.name;
  if (err instanceof Error || (typeof err === "object" && err !== null)) {
    if (typeof name === "string" && /^[A-Za-z_$][\w$.]{0,63}$/.test(name)) return name;
    return "Error";
  }
  return `non-Error value (${typeof err})`;
}
