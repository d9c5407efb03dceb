/** The terminal states: a task in one of them never changes again (short of a retry). */
export const TERMINAL_STATES = Object.freeze(["succeeded", "failed", "cancelled", "timed_out"]);
/** True when state is terminal. */
export function isTerminal(state) {
    return TERMINAL_STATES.includes(state);
}
function dateOrNull(v) {
    return v ? new Date(v) : null;
}
export function taskInfoFromWire(w) {
    return {
        id: w.id,
        tenant: w.tenant,
        author: w.author,
        workflow: w.workflow,
        pool: w.pool,
        state: w.state,
        attempt: w.attempt,
        maxAttempts: w.max_attempts,
        priority: w.priority ?? 0,
        createdAt: dateOrNull(w.created_at),
        runAt: dateOrNull(w.run_at),
        startedAt: dateOrNull(w.started_at),
        finishedAt: dateOrNull(w.finished_at),
        deadlineAt: new Date(w.deadline_at),
        traceId: w.trace_id ?? "",
        configVersion: w.config_version ?? "",
        result: w.result ?? null,
        error: w.error ? { code: w.error.code, message: w.error.message ?? "" } : null,
        waitingOn: w.waiting_on ?? null,
    };
}
export function taskEventFromWire(w) {
    return {
        id: w.id,
        taskId: w.task_id,
        from: w.from ? w.from : null,
        to: w.to,
        epoch: w.epoch,
        code: w.code ? w.code : null,
        at: new Date(w.at),
    };
}
export function evidenceFromWire(w) {
    return {
        id: w.id,
        taskId: w.task_id,
        attempt: w.attempt,
        epoch: w.epoch,
        kind: w.kind,
        body: w.body ?? null,
        createdAt: new Date(w.created_at),
    };
}
