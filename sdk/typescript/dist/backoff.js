import { DocketError } from "./docket_error.js";
/** ms spread by ±spread (0.5: between 0.5 × ms and 1.5 × ms). */
export function jitter(ms, spread = 0.5) {
    return ms * (1 - spread + Math.random() * 2 * spread);
}
/**
 * Exponential backoff with jitter: base, 2 × base, 4 × base, … up to max,
 * each spread by ±50 %.
 */
export class Backoff {
    baseMs;
    maxMs;
    n = 0;
    constructor(baseMs, maxMs) {
        this.baseMs = baseMs;
        this.maxMs = maxMs;
    }
    next() {
        const ms = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.n, 30));
        this.n++;
        return jitter(ms);
    }
    reset() {
        this.n = 0;
    }
}
/**
 * How long to wait before a failed call is tried again: one backoff for
 * network errors and server faults, a second, longer one when the server
 * asks to slow down (429, 503), which also honours its Retry-After.
 */
export class RetryPolicy {
    network;
    overload;
    constructor(options = {}) {
        this.network = new Backoff(options.baseMs ?? 100, options.maxMs ?? 5_000);
        this.overload = new Backoff(options.overloadBaseMs ?? 1_000, options.overloadMaxMs ?? 30_000);
    }
    delayFor(err) {
        if (err instanceof DocketError && err.overloaded) {
            return Math.max(err.retryAfterMs, this.overload.next());
        }
        return this.network.next();
    }
    reset() {
        this.network.reset();
        this.overload.reset();
    }
}
/** Waits ms, or less when signal aborts (it resolves then; it never rejects). */
export function sleep(ms, signal) {
    return new Promise((resolve) => {
        if (signal?.aborted) {
            resolve();
            return;
        }
        const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            resolve();
        };
        const timer = setTimeout(done, Math.max(0, ms));
        signal?.addEventListener("abort", done, { once: true });
    });
}
/** Lets a timer not keep the process alive (Node's Timeout.unref). */
export function unref(timer) {
    timer?.unref?.();
}
