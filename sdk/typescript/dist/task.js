/** The Task of a claimed task object, its input and traceparent. */
export function taskFromClaim(w, input, traceparent = "") {
    return Object.freeze({
        id: w.id,
        tenant: w.tenant,
        author: w.author,
        workflow: w.workflow,
        pool: w.pool,
        attempt: w.attempt,
        maxAttempts: w.max_attempts,
        deadlineAt: new Date(w.deadline_at),
        traceId: w.trace_id ?? "",
        configVersion: w.config_version ?? "",
        traceparent: typeof traceparent === "string" ? traceparent : "",
        input,
    });
}
