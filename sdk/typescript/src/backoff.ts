import { DocketError } from "./docket_error.js";

/** ms spread by ±spread (0.5: between 0.5 × ms and 1.5 × ms). */
export function jitter(ms: number, spread = 0.5): number {
  return ms * (1 - spread + Math.random() * 2 * spread);
}

/**
 * Exponential backoff with jitter: base, 2 × base, 4 × base, … up to max,
 * each spread by ±50 %.
 */
export class Backoff {
  private n = 0;

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {}

  next(): number {
    const ms = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.n, 30));
    this.n++;
    return jitter(ms);
  }

  reset(): void {
    this.n = 0;
  }
}

/**
 * How long to wait before a failed call is tried again: one backoff for
 * network errors and server faults, a second, longer one when the server
 * asks to slow down (429, 503), which also honours its Retry-After.
 */
export class RetryPolicy {
  private readonly network: Backoff;
  private readonly overload: Backoff;

  constructor(options: { baseMs?: number; maxMs?: number; overloadBaseMs?: number; overloadMaxMs?: number } = {}) {
    this.network = new Backoff(options.baseMs ?? 100, options.maxMs ?? 5_000);
    this.overload = new Backoff(options.overloadBaseMs ?? 1_000, options.overloadMaxMs ?? 30_000);
  }

  delayFor(err: unknown): number {
    if (err instanceof DocketError && err.overloaded) {
      return Math.max(err.retryAfterMs, this.overload.next());
    }
    return this.network.next();
  }

  reset(): void {
    this.network.reset();
    this.overload.reset();
  }
}

/** Waits ms, or less when signal aborts (it resolves then; it never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Lets a timer not keep the process alive (Node's Timeout.unref). */
export function unref(timer: unknown): void {
  (timer as { unref?: () => void } | undefined)?.unref?.();
}
