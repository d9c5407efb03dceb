import { RetryPolicy, unref } from "./backoff.js";
import { DocketError } from "./docket_error.js";
import type { HttpTransport } from "./http_transport.js";
import type { Logger } from "./logger.js";

/** One item of a batched worker call, already encoded as JSON. */
export interface BatchItem {
  /** The item's lease, which the answer names again. */
  readonly lease: string;
  /** The item as JSON: `{"lease":…, …}`. */
  readonly json: string;
}

interface Entry {
  readonly item: BatchItem;
  resolve(status: string): void;
  reject(err: unknown): void;
}

interface ItemsAnswer {
  items?: Array<{ lease?: string; status?: string }>;
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
export class BatchSender {
  private readonly o: Required<BatchSenderOptions>;
  /** New items, in arrival order. */
  private queue: Entry[] = [];
  /** Batches to send as they are: retried after a failure, or halves of a refused one. */
  private ready: Entry[][] = [];
  private readonly inFlight = new Set<Entry[]>();
  private scheduled = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private idleWaiters: Array<() => void> = [];
  private closed = false;
  private abandoned: DocketError | undefined;

  constructor(options: BatchSenderOptions) {
    this.o = {
      maxItems: 1_000,
      maxBytes: 1_000_000,
      maxInFlight: 2,
      timeoutMs: 30_000,
      retry: new RetryPolicy(),
      ...options,
    };
  }

  /** Items not yet answered (waiting or in a call). */
  get pending(): number {
    let n = this.queue.length;
    for (const b of this.ready) n += b.length;
    for (const b of this.inFlight) n += b.length;
    return n;
  }

  /** Sends item in a batch; resolves with its status. */
  send(item: BatchItem): Promise<string> {
    if (this.closed) return Promise.reject(new DocketError("closed", "docket: the worker has stopped"));
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Stops taking items and resolves once every item has been answered, or
   * after timeoutMs: the items still unanswered then reject (`abandoned`)
   * and their count is the result.
   */
  async drain(timeoutMs: number): Promise<number> {
    this.closed = true;
    if (this.pending === 0) return 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const idle = new Promise<"idle">((resolve) => this.idleWaiters.push(() => resolve("idle")));
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const r = await Promise.race([idle, timeout]);
    clearTimeout(timer);
    if (r === "idle") return 0;
    const count = this.pending;
    const err = new DocketError("abandoned", "docket: the worker stopped before the server answered");
    this.abandoned = err;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    for (const e of this.queue) e.reject(err);
    for (const b of this.ready) for (const e of b) e.reject(err);
    for (const b of this.inFlight) for (const e of b) e.reject(err);
    this.queue = [];
    this.ready = [];
    return count;
  }

  private schedule(): void {
    if (this.scheduled || this.retryTimer !== undefined) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.abandoned || this.retryTimer !== undefined) return;
    while (this.inFlight.size < this.o.maxInFlight) {
      const batch = this.take();
      if (batch.length === 0) break;
      this.inFlight.add(batch);
      void this.post(batch).finally(() => {
        this.inFlight.delete(batch);
        this.pump();
        if (this.pending === 0) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const w of waiters) w();
        }
      });
    }
  }

  private take(): Entry[] {
    const again = this.ready.shift();
    if (again) return again;
    const batch: Entry[] = [];
    let bytes = 12; // {"items":[]}
    while (batch.length < this.o.maxItems && this.queue.length > 0) {
      const size = this.queue[0]!.item.json.length + 1;
      if (batch.length > 0 && bytes + size > this.o.maxBytes) break;
      batch.push(this.queue.shift()!);
      bytes += size;
    }
    return batch;
  }

  private async post(batch: Entry[]): Promise<void> {
    const body = `{"items":[${batch.map((e) => e.item.json).join(",")}]}`;
    let answer: ItemsAnswer;
    try {
      const res = await this.o.transport.request<ItemsAnswer>({
        method: "POST",
        path: this.o.path,
        body,
        timeoutMs: this.o.timeoutMs,
      });
      answer = res.data;
    } catch (err) {
      if (!this.abandoned) this.failed(batch, err);
      return;
    }
    if (this.abandoned) return;
    this.o.retry.reset();
    const statuses = statusesOf(batch, answer);
    batch.forEach((e, i) => e.resolve(statuses[i]!));
  }

  private failed(batch: Entry[], err: unknown): void {
    const de = err instanceof DocketError ? err : undefined;
    if (de && !de.transient) {
      if ((de.status === 400 || de.status === 413) && batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        this.ready.unshift(batch.slice(0, half), batch.slice(half));
        return; // pump runs when this call's slot frees
      }
      this.o.logger.error(this.o.event, { code: de.code, status: de.status, count: batch.length });
      for (const e of batch) e.reject(err);
      return;
    }
    this.o.logger.warn(this.o.event, { code: de?.code ?? "network_error", status: de?.status ?? 0, count: batch.length });
    this.ready.unshift(batch);
    if (this.retryTimer === undefined) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.pump();
      }, this.o.retry.delayFor(err));
      unref(this.retryTimer);
    }
  }
}

/** Each item's status: by position when the answer lines up, else by lease. */
function statusesOf(batch: Entry[], answer: ItemsAnswer): string[] {
  const items = Array.isArray(answer?.items) ? answer.items : [];
  if (items.length === batch.length && items.every((it, i) => it.lease === batch[i]!.item.lease)) {
    return items.map((it) => it.status ?? "missing");
  }
  const byLease = new Map<string, string[]>();
  for (const it of items) {
    if (typeof it.lease !== "string") continue;
    const list = byLease.get(it.lease) ?? [];
    list.push(it.status ?? "missing");
    byLease.set(it.lease, list);
  }
  return batch.map((e) => byLease.get(e.item.lease)?.shift() ?? "missing");
}
