/**
 * An error answer of the Docket server, or a call that got no answer.
 *
 * `code` is Docket's stable error code (`not_found`, `queue_full`,
 * `idempotency_conflict`, `submissions_paused`, …), or one of the SDK's own:
 * - `network_error`: no answer came (connection refused or dropped);
 * - `timeout`: no answer came within the call's time limit;
 * - `http_error`: an answer that is not Docket's error envelope (a proxy's
 *   error page, for example).
 */
export declare class DocketError extends Error {
    readonly name = "DocketError";
    /** Docket's error code, or `network_error`, `timeout`, `http_error`. */
    readonly code: string;
    /** The HTTP status; 0 when no answer came. */
    readonly status: number;
    /** The server's trace ID of the request, when it sent one. */
    readonly traceId: string;
    /** The server's `Retry-After` in milliseconds (429 and some 503 answers); 0 when none. */
    readonly retryAfterMs: number;
    constructor(code: string, message: string, options?: {
        status?: number;
        traceId?: string;
        retryAfterMs?: number;
        cause?: unknown;
    });
    /** True when the same call may succeed later: no answer, 408, 429 or 5xx. */
    get transient(): boolean;
    /** True when the server asked the caller to slow down: 429 or 503. */
    get overloaded(): boolean;
}
