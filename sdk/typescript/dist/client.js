import { sleep } from "./backoff.js";
import { DocketError } from "./docket_error.js";
import { HttpTransport } from "./http_transport.js";
import { evidenceFromWire, isTerminal, taskEventFromWire, taskInfoFromWire, } from "./task_info.js";
/** Longest wait one request asks the server to hold. */
const MAX_SERVER_WAIT_MS = 60_000;
const MAX_BATCH = 1_000;
const FLOW_SCOPES = ["pool", "tenant", "workflow"];
/** The member of a paused target that says its pause refuses submissions. */
const REFUSE = "refuse_submissions";
/**
 * Calls Docket's task API with one key: submit, read, wait, cancel, retry,
 * and read a task's input, history and evidence; with an admin key, pause,
 * resume and limit what starts (flow control). Errors reject with a
 * DocketError.
 */
export class Client {
    transport;
    constructor(options) {
        this.transport = new HttpTransport({ url: options.url, key: options.key, fetch: options.fetch });
    }
    /** Submits one task of a registered workflow. */
    async submit(workflow, input, options = {}) {
        const headers = { "idempotency-key": options.idempotencyKey ?? crypto.randomUUID() };
        if (options.traceparent)
            headers.traceparent = options.traceparent;
        const res = await this.transport.request({
            method: "POST",
            path: "/v1/tasks",
            headers,
            body: JSON.stringify(submitBody(workflow, input, options)),
        });
        return { task: taskInfoFromWire(res.data), replayed: res.status === 200 };
    }
    /** Submits up to 1,000 tasks in one call; each item is answered on its own. */
    async submitBatch(items) {
        if (items.length < 1 || items.length > MAX_BATCH) {
            throw new RangeError(`docket: submitBatch: 1 to ${MAX_BATCH} items`);
        }
        const tasks = items.map((it) => {
            if (!it.idempotencyKey)
                throw new TypeError("docket: submitBatch: every item needs an idempotencyKey");
            return { idempotency_key: it.idempotencyKey, ...submitBody(it.workflow, it.input, it) };
        });
        const res = await this.transport.request({ method: "POST", path: "/v1/tasks/batch", body: JSON.stringify({ tasks }), timeoutMs: 120_000 });
        return res.data.results.map((r) => ({
            status: r.status,
            task: r.task ? taskInfoFromWire(r.task) : null,
            error: r.error ? { code: r.error.code, message: r.error.message ?? "" } : null,
        }));
    }
    /**
     * Returns a task; with waitMs, once it is terminal or when waitMs has
     * passed (as it is then). When the server holds too many waits (429
     * too_many_requests) it asks again after its Retry-After, within waitMs.
     */
    async get(id, options = {}) {
        const waitMs = options.waitMs ?? 0;
        if (waitMs <= 0)
            return this.read(id, undefined, options.signal);
        const end = Date.now() + waitMs;
        for (;;) {
            const left = end - Date.now();
            if (left <= 0 || options.signal?.aborted)
                return this.read(id, undefined, options.signal);
            const wait = Math.max(1, Math.min(Math.floor(left), MAX_SERVER_WAIT_MS));
            let t;
            try {
                t = await this.read(id, wait, options.signal);
            }
            catch (err) {
                if (!(err instanceof DocketError) || err.code !== "too_many_requests")
                    throw err;
                await sleep(Math.min(Math.max(err.retryAfterMs, 100), left), options.signal);
                continue;
            }
            if (isTerminal(t.state) || wait < MAX_SERVER_WAIT_MS)
                return t;
        }
    }
    /** Cancels a queued or running task; returns it (cancelled, or its earlier terminal state). */
    async cancel(id) {
        const res = await this.transport.request({ method: "POST", path: `${taskPath(id)}/cancel` });
        return taskInfoFromWire(res.data);
    }
    /**
     * Queues a failed, timed_out or cancelled task again and returns it: same
     * ID, input and idempotency key, its attempt budget renewed. A task that
     * succeeded or is not terminal rejects with code `not_retryable` (409); a
     * full pool or tenant with `queue_full` or `tenant_quota_exceeded` (429,
     * with `retryAfterMs`), as a submission does.
     */
    async retry(id) {
        const res = await this.transport.request({ method: "POST", path: `${taskPath(id)}/retry` });
        return taskInfoFromWire(res.data);
    }
    /** The task's input exactly as admitted (parsed JSON). */
    async input(id) {
        const res = await this.transport.request({ method: "GET", path: `${taskPath(id)}/input` });
        return res.data;
    }
    /** The task's state transitions, oldest first. */
    async events(id) {
        const res = await this.transport.request({ method: "GET", path: `${taskPath(id)}/events` });
        return (res.data.events ?? []).map(taskEventFromWire);
    }
    /** The evidence the task's handlers recorded. */
    async evidence(id) {
        const res = await this.transport.request({
            method: "GET",
            path: `${taskPath(id)}/evidence`,
        });
        return (res.data.evidence ?? []).map(evidenceFromWire);
    }
    /**
     * Pauses one pool, tenant or workflow (an admin key): nothing new of it
     * starts, on any node; running tasks finish. Submissions are still
     * admitted (queued, with `waitingOn: "paused"`), unless
     * `refuseSubmissions` is true: then they reject with code
     * `submissions_paused` (409) until the resume. A pause of what is paused
     * already sets its refusal anew (without the option, it ends it).
     * Resolves with everything paused. The refusal is said in the options
     * only: a target with a `refuse_submissions` member is a TypeError.
     */
    async pause(target, options = {}) {
        const refuse = options.refuseSubmissions;
        if (refuse !== undefined && typeof refuse !== "boolean") {
            throw new TypeError("docket: pause: refuseSubmissions must be true or false");
        }
        if (Object.hasOwn(target, REFUSE)) {
            throw new TypeError("docket: pause: say { refuseSubmissions } in the options, not in the target");
        }
        return this.setPaused("/v1/admin/pause", target, refuse === true);
    }
    /**
     * Resumes what pause paused, refusing submissions or not; its waiting
     * tasks start in the usual order and its submissions are admitted again.
     * Resolves with what is still paused. An item of pause's answer may be
     * passed as it is (its `refuse_submissions` member is not sent).
     */
    async resume(target) {
        const { [REFUSE]: _refuse, ...named } = target;
        return this.setPaused("/v1/admin/resume", named, false);
    }
    /**
     * Limits the starts of a tenant's tasks, all nodes together (an admin
     * key): in no one-second window more than `ratePerSecond + burst`. A
     * missing tenant is created.
     */
    async setTenantRateLimit(tenant, limits) {
        const res = await this.transport.request({
            method: "PATCH",
            path: `/v1/admin/tenants/${encodeURIComponent(tenant)}`,
            body: JSON.stringify(limitsBody(limits)),
        });
        const w = res.data;
        return { id: w.id, ...limitsFromWire(w), maxInFlight: w.max_in_flight, weight: w.weight };
    }
    /**
     * Sets a workflow's limits, built-in or remote (an admin key): the rate
     * limit on its starts across every tenant, and how many tasks of one
     * concurrency key run at once.
     */
    async setWorkflowLimits(name, limits) {
        const body = limitsBody(limits);
        if (limits.concurrencyPerKey !== undefined)
            body.concurrency_per_key = limits.concurrencyPerKey;
        const res = await this.transport.request({
            method: "PATCH",
            path: `/v1/admin/workflows/${encodeURIComponent(name)}`,
            body: JSON.stringify(body),
        });
        const w = res.data;
        return { name: w.name, ...limitsFromWire(w), concurrencyPerKey: w.concurrency_per_key };
    }
    async setPaused(path, target, refuseSubmissions) {
        const named = Object.entries(target).filter(([, key]) => key !== undefined);
        if (named.length !== 1 || !FLOW_SCOPES.includes(named[0][0])) {
            throw new TypeError("docket: name exactly one of pool, tenant or workflow");
        }
        const body = Object.fromEntries(named);
        // Sent only when asked: a server that predates it refuses the unknown
        // field rather than pausing without it.
        if (refuseSubmissions)
            body[REFUSE] = true;
        const res = await this.transport.request({
            method: "POST",
            path,
            body: JSON.stringify(body),
        });
        return res.data.paused ?? [];
    }
    async read(id, waitMs, signal) {
        const res = await this.transport.request({
            method: "GET",
            path: taskPath(id),
            query: waitMs ? { wait: `${waitMs}ms` } : undefined,
            timeoutMs: (waitMs ?? 0) + 30_000,
            signal,
        });
        return taskInfoFromWire(res.data);
    }
}
function taskPath(id) {
    return `/v1/tasks/${encodeURIComponent(id)}`;
}
/** The body of a PATCH of a rate limit: only the fields given (null removes). */
function limitsBody(o) {
    const body = {};
    if (o.ratePerSecond !== undefined)
        body.rate_per_second = o.ratePerSecond;
    if (o.burst !== undefined)
        body.burst = o.burst;
    return body;
}
function limitsFromWire(w) {
    return {
        paused: w.paused,
        refuseSubmissions: w.refuse_submissions === true,
        ratePerSecond: w.rate_per_second ?? null,
        burst: w.burst ?? null,
    };
}
/** The JSON body of one submission: only the fields given. */
function submitBody(workflow, input, o) {
    const body = { workflow, input: input === undefined ? null : input };
    if (o.pool !== undefined)
        body.pool = o.pool;
    if (o.timeoutMs !== undefined)
        body.timeout_ms = o.timeoutMs;
    if (o.priority !== undefined)
        body.priority = o.priority;
    if (o.maxAttempts !== undefined)
        body.max_attempts = o.maxAttempts;
    if (o.runAt !== undefined)
        body.run_at = o.runAt instanceof Date ? o.runAt.toISOString() : o.runAt;
    if (o.concurrencyKey !== undefined)
        body.concurrency_key = o.concurrencyKey;
    if (o.dependsOn !== undefined)
        body.depends_on = o.dependsOn;
    if (o.onDependencyFailure !== undefined)
        body.on_dependency_failure = o.onDependencyFailure;
    return body;
}
