import { RetryPolicy } from "./backoff.js";
import type { HttpTransport } from "./http_transport.js";
import type { Logger } from "./logger.js";
/** One item of a batched worker call, already encoded as JSON. */
export interface BatchItem {
    /** The item's lease, which the answer names again. */
    readonly lease: string;
    /** The item as JSON: `{"lease":…, …}`. */
    readonly json: string;
}
export interface BatchSenderOptions {
    transport: HttpTransport;
    /** `/v1/worker/finish` or `/v1/worker/evidence`. */
    path: string;
    logger: Logger;
    /** Log event of a failed call, e.g. `finish_failed`. */
    event: string;
    /** Most items per call (the server takes up to 1,000). */
    maxItems?: number;
    /** Most bytes per call, unless one item alone is larger. */
    maxBytes?: number;
    /** Most calls at once. */
    maxInFlight?: number;
    /** Time limit of one call. */
    timeoutMs?: number;
    retry?: RetryPolicy;
}
/**
 * Gathers items (finish outcomes, evidence) of many tasks into few calls of
 * `{"items":[…]}` and resolves each item with its own status (`ok`,
 * `lease_lost`, `conflict`, …).
 *
 * Items added in one turn of the event loop leave together at the next
 * (setImmediate); while maxInFlight calls are out, new items wait and leave
 * together in the next call. A call that gets no answer or a transient
 * answer (408, 429, 5xx) is sent again after a backoff, the same items in
 * the same order: the server answers a re-sent committed item `ok`. A call
 * refused as a whole (400, 413) is split in halves until the refused item
 * stands alone; that item rejects with the DocketError, the others go on.
 */
export declare class BatchSender {
    private readonly o;
    /** New items, in arrival order. */
    private queue;
    /** Batches to send as they are: retried after a failure, or halves of a refused one. */
    private ready;
    private readonly inFlight;
    private scheduled;
    private retryTimer;
    private idleWaiters;
    private closed;
    private abandoned;
    constructor(options: BatchSenderOptions);
    /** Items not yet answered (waiting or in a call). */
    get pending(): number;
    /** Sends item in a batch; resolves with its status. */
    send(item: BatchItem): Promise<string>;
    /**
     * Stops taking items and resolves once every item has been answered, or
     * after timeoutMs: the items still unanswered then reject (`abandoned`)
     * and their count is the result.
     */
    drain(timeoutMs: number): Promise<number>;
    private schedule;
    private pump;
    private take;
    private post;
    private failed;
}
