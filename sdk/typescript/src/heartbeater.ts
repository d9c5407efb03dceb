import { RetryPolicy } from "./backoff.js";
import { DocketError } from "./docket_error.js";
import type { HeldLease } from "./held_lease.js";
import type { HttpTransport } from "./http_transport.js";
import type { Logger } from "./logger.js";

/** Why a held lease is no longer the worker's, as a heartbeat tells it. */
export type LostCode = "cancelled" | "timed_out" | "lease_lost";

export interface HeartbeaterOptions {
  transport: HttpTransport;
  workerId: string;
  /** The worker's held leases by token (read at each beat). */
  leases: ReadonlyMap<string, HeldLease>;
  /** A running lease is lost: a heartbeat answered code, or its TTL passed unrenewed. */
  onLost(lease: HeldLease, code: LostCode): void;
  /** The server refuses the worker itself (401, 403, …): stop. */
  onFatal(err: DocketError): void;
  logger: Logger;
  retry?: RetryPolicy;
}

/** Most leases in one heartbeat call (the server's limit). */
const MAX_LEASES_PER_CALL = 10_000;

interface HeartbeatAnswer {
  leases?: Array<{ lease?: string; status?: string }>;
}

/**
 * Renews every held lease with one call per interval, the interval being
 * the `heartbeat_ms` of the last claim answer. After a claim that brought a
 * lease still running, the next beat goes at once (and the interval starts
 * again from it), so that a cancel that raced the claim lands at once. Beats
 * never overlap, a beat with nothing to renew is not sent, and however
 * often claims come no two beats are closer than a quarter interval (no
 * heartbeat flood under a stream of small claims).
 *
 * A running lease whose heartbeat answers anything but `ok`, or that has
 * gone a whole `lease_ttl_ms` without a renewal (the server is unreachable),
 * is handed to onLost. A lease whose handler has returned keeps being
 * renewed until its outcome is answered; a bad status for it only stops
 * renewing it (the finish answer tells the rest).
 */
export class Heartbeater {
  private readonly o: HeartbeaterOptions & { retry: RetryPolicy };
  private intervalMs = 1_000;
  private leaseTtlMs = 30_000;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private inFlight: Promise<void> | undefined;
  private again = false;
  private soonScheduled = false;
  private lastBeatAt = 0;
  /** Leases whose handler returned and that a heartbeat said are gone. */
  private readonly stale = new WeakSet<HeldLease>();
  /** Calls sent so far. */
  calls = 0;

  constructor(options: HeartbeaterOptions) {
    this.o = { retry: new RetryPolicy(), ...options };
  }

  /** Takes the timing of a claim answer. */
  setTiming(heartbeatMs: number | undefined, leaseTtlMs: number | undefined): void {
    if (typeof heartbeatMs === "number" && heartbeatMs > 0) this.intervalMs = Math.max(10, heartbeatMs);
    if (typeof leaseTtlMs === "number" && leaseTtlMs > 0) this.leaseTtlMs = leaseTtlMs;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(this.intervalMs);
  }

  /** A claim added leases: beat at once if one of them is still running and was never renewed. */
  soon(): void {
    if (!this.running || this.soonScheduled) return;
    this.soonScheduled = true;
    setImmediate(() => {
      this.soonScheduled = false;
      if (!this.running || this.inFlight) {
        this.again = this.again || this.hasUnrenewed();
        return;
      }
      if (!this.hasUnrenewed()) return;
      const wait = this.lastBeatAt + this.intervalMs / 4 - Date.now();
      if (wait <= 0) this.beatNow();
      else if (this.timer === undefined || this.nextBeatAt > Date.now() + wait) this.schedule(wait);
    });
  }

  /** Stops beating; resolves once a beat in flight has been answered. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  private nextBeatAt = 0;

  private hasUnrenewed(): boolean {
    for (const l of this.o.leases.values()) {
      if (l.phase === "running" && !l.aborted && !l.heartbeated) return true;
    }
    return false;
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.running) return;
    this.nextBeatAt = Date.now() + ms;
    // Not unref'd: while the worker runs, its heartbeat keeps the process alive.
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.beatNow();
    }, ms);
  }

  private beatNow(): void {
    if (!this.running) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.inFlight = this.beat().finally(() => {
      this.inFlight = undefined;
      if (!this.running) return;
      if (this.again) {
        this.again = false;
        this.soon();
      }
    });
  }

  private async beat(): Promise<void> {
    const batch: HeldLease[] = [];
    for (const l of this.o.leases.values()) {
      if (l.phase === "done" || l.aborted || this.stale.has(l)) continue;
      batch.push(l);
    }
    let next = this.intervalMs;
    try {
      for (let i = 0; i < batch.length; i += MAX_LEASES_PER_CALL) {
        await this.send(batch.slice(i, i + MAX_LEASES_PER_CALL));
      }
      this.o.retry.reset();
    } catch (err) {
      const de = err instanceof DocketError ? err : undefined;
      if (de && !de.transient) {
        this.o.logger.error("heartbeat_refused", { code: de.code, status: de.status });
        this.o.onFatal(de);
        return;
      }
      this.o.logger.warn("heartbeat_failed", { code: de?.code ?? "network_error", status: de?.status ?? 0 });
      // Sooner than the interval, so that a short outage costs no lease.
      next = Math.min(this.intervalMs, this.o.retry.delayFor(err));
    } finally {
      this.expire();
      this.schedule(next);
    }
  }

  private async send(batch: HeldLease[]): Promise<void> {
    const sentAt = Date.now();
    this.lastBeatAt = sentAt;
    for (const l of batch) l.heartbeated = true;
    this.calls++;
    const res = await this.o.transport.request<HeartbeatAnswer>({
      method: "POST",
      path: "/v1/worker/heartbeat",
      body: JSON.stringify({ leases: batch.map((l) => l.token), worker_id: this.o.workerId }),
      timeoutMs: Math.max(1_000, Math.min(10_000, this.leaseTtlMs / 2)),
    });
    const items = Array.isArray(res.data?.leases) ? res.data.leases : [];
    for (const it of items) {
      const lease = typeof it.lease === "string" ? this.o.leases.get(it.lease) : undefined;
      if (!lease || lease.phase === "done") continue;
      if (it.status === "ok") {
        lease.renewedAt = Math.max(lease.renewedAt, sentAt);
        continue;
      }
      const code: LostCode = it.status === "cancelled" || it.status === "timed_out" ? it.status : "lease_lost";
      if (lease.phase === "running") this.o.onLost(lease, code);
      else this.stale.add(lease);
    }
  }

  /** Running leases not renewed within the TTL are lost: the server has recovered them by now. */
  private expire(): void {
    const limit = Date.now() - this.leaseTtlMs;
    for (const l of this.o.leases.values()) {
      if (l.phase === "running" && !l.aborted && l.renewedAt < limit) this.o.onLost(l, "lease_lost");
    }
  }
}
