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
export declare class Heartbeater {
    private readonly o;
    private intervalMs;
    private leaseTtlMs;
    private timer;
    private running;
    private inFlight;
    private again;
    private soonScheduled;
    private lastBeatAt;
    /** Leases whose handler returned and that a heartbeat said are gone. */
    private readonly stale;
    /** Calls sent so far. */
    calls: number;
    constructor(options: HeartbeaterOptions);
    /** Takes the timing of a claim answer. */
    setTiming(heartbeatMs: number | undefined, leaseTtlMs: number | undefined): void;
    start(): void;
    /** A claim added leases: beat at once if one of them is still running and was never renewed. */
    soon(): void;
    /** Stops beating; resolves once a beat in flight has been answered. */
    stop(): Promise<void>;
    private nextBeatAt;
    private hasUnrenewed;
    private schedule;
    private beatNow;
    private beat;
    private send;
    /** Running leases not renewed within the TTL are lost: the server has recovered them by now. */
    private expire;
}
