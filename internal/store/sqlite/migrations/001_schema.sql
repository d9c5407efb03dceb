-- Docket schema for SQLite (see internal/store/engine for the model).
-- Times are Unix milliseconds (INTEGER). The same tables as PostgreSQL.

CREATE TABLE tenants (
    id            TEXT PRIMARY KEY,
    max_in_flight INTEGER NOT NULL DEFAULT 0 CHECK (max_in_flight >= 0), -- 0: unlimited
    weight        INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 1),
    created_at    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE, -- sha256 of the key; the key itself is never stored
    tenant     TEXT NOT NULL REFERENCES tenants (id),
    principal  TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('member', 'admin')),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) WITHOUT ROWID;
CREATE INDEX api_keys_tenant ON api_keys (tenant, id);

-- In-flight (non-terminal) tasks per pool and per tenant: the sum of a
-- key's slots. Slot 0 is the gate admission checks and adds to; releases
-- go to slot 1 (SQLite has one writer: nothing to spread).
CREATE TABLE counters (
    scope TEXT NOT NULL CHECK (scope IN ('pool', 'tenant')),
    key   TEXT NOT NULL,
    slot  INTEGER NOT NULL CHECK (slot BETWEEN 0 AND 16),
    n     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, key, slot)
) WITHOUT ROWID;
INSERT INTO counters (scope, key, slot) VALUES ('pool', 'online', 0), ('pool', 'offline', 0);

-- What was admitted, with its input: immutable (R3), written once.
CREATE TABLE tasks (
    id              TEXT PRIMARY KEY, -- UUIDv7: sorts by creation
    tenant          TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    author          TEXT NOT NULL,
    workflow        TEXT NOT NULL,
    pool            TEXT NOT NULL,
    priority        INTEGER NOT NULL,
    max_attempts    INTEGER NOT NULL CHECK (max_attempts >= 1),
    deadline_at     INTEGER NOT NULL,
    run_at          INTEGER,
    created_at      INTEGER NOT NULL,
    trace_id        TEXT NOT NULL,
    config_version  TEXT NOT NULL,
    input           BLOB NOT NULL
);
CREATE INDEX tasks_tenant ON tasks (tenant, id);
CREATE TRIGGER tasks_no_update BEFORE UPDATE ON tasks
BEGIN
    SELECT RAISE(ABORT, 'a task and its input are immutable');
END;

-- The live tasks: queued or running. A row leaves in the transaction that
-- makes its task terminal, so these indexes hold live work only.
CREATE TABLE task_queue (
    id               TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    pool             TEXT NOT NULL,
    priority         INTEGER NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('queued', 'running')),
    attempt          INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     INTEGER NOT NULL,
    lease_epoch      INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    run_after        INTEGER, -- NULL: ready; set: delayed (a retry, or run_at), promoted when due
    deadline_at      INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    error_code       TEXT, -- the last attempt's failure, while the task is retried
    error_message    TEXT
) WITHOUT ROWID;
CREATE INDEX task_queue_claim ON task_queue (pool, tenant, priority DESC, id) WHERE state = 'queued' AND run_after IS NULL;
CREATE INDEX task_queue_delayed ON task_queue (pool, run_after) WHERE state = 'queued' AND run_after IS NOT NULL;
CREATE INDEX task_queue_lease ON task_queue (lease_expires_at) WHERE state = 'running';
CREATE INDEX task_queue_deadline ON task_queue (deadline_at);
CREATE INDEX task_queue_tenant ON task_queue (tenant, id);

-- One row per terminal task, written once. Rows are appended in finishing
-- order, so the retention cleaner reads the oldest from the front.
CREATE TABLE task_results (
    task_id       TEXT NOT NULL UNIQUE,
    tenant        TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('succeeded', 'failed', 'cancelled', 'timed_out')),
    attempt       INTEGER NOT NULL,
    lease_epoch   INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER NOT NULL,
    result        BLOB,
    error_code    TEXT,
    error_message TEXT
);
CREATE INDEX task_results_tenant_state ON task_results (tenant, state, task_id);
CREATE TRIGGER task_results_no_update BEFORE UPDATE ON task_results
BEGIN
    SELECT RAISE(ABORT, 'a task result is immutable');
END;

CREATE TABLE idempotency_keys (
    tenant       TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;

-- Set to 1 only inside the retention cleaner's transaction: the one
-- statement allowed to delete history (whole finished tasks).
CREATE TABLE retention_guard (deleting INTEGER NOT NULL);
INSERT INTO retention_guard (deleting) VALUES (0);

-- Append-only history of every transition.
CREATE TABLE task_events (
    id         INTEGER PRIMARY KEY,
    task_id    TEXT NOT NULL,
    from_state TEXT NOT NULL, -- '' for the admission event
    to_state   TEXT NOT NULL,
    epoch      INTEGER NOT NULL,
    code       TEXT NOT NULL DEFAULT '',
    at         INTEGER NOT NULL
);
CREATE INDEX task_events_task ON task_events (task_id, id);
CREATE TRIGGER task_events_no_update BEFORE UPDATE ON task_events
BEGIN
    SELECT RAISE(ABORT, 'task events are append-only');
END;
CREATE TRIGGER task_events_no_delete BEFORE DELETE ON task_events
WHEN (SELECT deleting FROM retention_guard) = 0
BEGIN
    SELECT RAISE(ABORT, 'task events are append-only');
END;

CREATE TABLE evidence (
    id         INTEGER PRIMARY KEY,
    task_id    TEXT NOT NULL,
    attempt    INTEGER NOT NULL,
    epoch      INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX evidence_task ON evidence (task_id, id);

-- Per (pool, tenant): the number of ready tasks and the tenant's virtual
-- time (stride scheduling). Claims read only tenants with ready work.
CREATE TABLE tenant_queues (
    pool   TEXT NOT NULL,
    tenant TEXT NOT NULL,
    queued INTEGER NOT NULL DEFAULT 0 CHECK (queued >= 0),
    vtime  REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (pool, tenant)
) WITHOUT ROWID;
CREATE INDEX tenant_queues_active ON tenant_queues (pool, vtime, tenant) WHERE queued > 0;
CREATE INDEX tenant_queues_vtime ON tenant_queues (pool, vtime);

CREATE TABLE rule_sets (
    seq          INTEGER PRIMARY KEY,
    version      TEXT NOT NULL UNIQUE,
    hash         TEXT NOT NULL,
    body         BLOB NOT NULL,
    published_at INTEGER NOT NULL
);
CREATE TRIGGER rule_sets_no_update BEFORE UPDATE ON rule_sets
BEGIN
    SELECT RAISE(ABORT, 'rule sets are immutable');
END;
