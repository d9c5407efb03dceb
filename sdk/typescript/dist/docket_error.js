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
export class DocketError extends Error {
    name = "DocketError";
    /** Docket's error code, or `network_error`, `timeout`, `http_error`. */
    code;
    /** The HTTP status; 0 when no answer came. */
    status;
    /** The server's trace ID of the request, when it sent one. */
    traceId;
    /** The server's `Retry-After` in milliseconds (429 and some 503 answers); 0 when none. */
    retryAfterMs;
    constructor(code, message, options = {}) {
        super(message, options.cause === undefined ? undefined : { cause: options.cause });
        this.code = code;
        this.status = options.status ?? 0;
        this.traceId = options.traceId ?? "";
        this.retryAfterMs = options.retryAfterMs ?? 0;
    }
    /** True when the same call may succeed later: no answer, 408, 429 or 5xx. */
    get transient() {
        return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
    }
    /** True when the server asked the caller to slow down: 429 or 503. */
    get overloaded() {
        return this.status === 429 || this.status === 503;
    }
}
