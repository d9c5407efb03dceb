/** ms spread by ±spread (0.5: between 0.5 × ms and 1.5 × ms). */
export declare function jitter(ms: number, spread?: number): number;
/**
 * Exponential backoff with jitter: base, 2 × base, 4 × base, … up to max,
 * each spread by ±50 %.
 */
export declare class Backoff {
    private readonly baseMs;
    private readonly maxMs;
    private n;
    constructor(baseMs: number, maxMs: number);
    next(): number;
    reset(): void;
}
/**
 * How long to wait before a failed call is tried again: one backoff for
 * network errors and server faults, a second, longer one when the server
 * asks to slow down (429, 503), which also honours its Retry-After.
 */
export declare class RetryPolicy {
    private readonly network;
    private readonly overload;
    constructor(options?: {
        baseMs?: number;
        maxMs?: number;
        overloadBaseMs?: number;
        overloadMaxMs?: number;
    });
    delayFor(err: unknown): number;
    reset(): void;
}
/** Waits ms, or less when signal aborts (it resolves then; it never rejects). */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<void>;
/** Lets a timer not keep the process alive (Node's Timeout.unref). */
export declare function unref(timer: unknown): void;
