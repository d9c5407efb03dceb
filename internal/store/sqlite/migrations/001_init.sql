-- Docket schema for SQLite. Times are Unix milliseconds (INTEGER).

CREATE TABLE tenants (
    id            TEXT PRIMARY KEY,
    max_in_flight INTEGER NOT NULL DEFAULT 0 CHECK (max_in_flight >= 0), -- 0: unlimited
    weight        INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 1),
    in_flight     INTEGER NOT NULL DEFAULT 0 CHECK (in_flight >= 0),     -- live reservations
    created_at    INTEGER NOT NULL
);

CREATE TABLE api_keys (
    hash       TEXT PRIMARY KEY, -- sha256 of the key; the key itself is never stored
    tenant     TEXT NOT NULL REFERENCES tenants (id),
    principal  TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('member', 'admin')),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

-- One row per pool: the live reservation counter checked by admission, and
-- the pool's virtual clock for fair (stride) dispatch.
CREATE TABLE pools (
    name      TEXT PRIMARY KEY,
    in_flight INTEGER NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    vclock    REAL NOT NULL DEFAULT 0
);
INSERT INTO pools (name) VALUES ('online'), ('offline');

CREATE TABLE tasks (
    id               TEXT PRIMARY KEY, -- UUIDv7: sorts by creation
    tenant           TEXT NOT NULL,
    author           TEXT NOT NULL,
    workflow         TEXT NOT NULL,
    pool             TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out')),
    priority         INTEGER NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    lease_epoch      INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    run_after        INTEGER, -- NULL: ready; set: a delayed retry, promoted when due
    deadline_at      INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    trace_id         TEXT NOT NULL,
    config_version   TEXT NOT NULL,
    result           BLOB,
    error_code       TEXT
);
-- Claim: a tenant's ready tasks in dispatch order.
CREATE INDEX tasks_claim ON tasks (pool, tenant, priority DESC, id) WHERE state = 'queued' AND run_after IS NULL;
-- Promotion of delayed retries that are due.
CREATE INDEX tasks_delayed ON tasks (pool, run_after) WHERE state = 'queued' AND run_after IS NOT NULL;
-- Recovery: expired leases.
CREATE INDEX tasks_lease_expiry ON tasks (lease_expires_at) WHERE state = 'running';
-- Deadline enforcement.
CREATE INDEX tasks_deadline ON tasks (deadline_at) WHERE state IN ('queued', 'running');
-- Listing, newest first.
CREATE INDEX tasks_tenant ON tasks (tenant, id);
CREATE INDEX tasks_tenant_state ON tasks (tenant, state, id);
CREATE INDEX tasks_tenant_pool ON tasks (tenant, pool, id);

-- Input is immutable once admitted (R3).
CREATE TABLE task_inputs (
    task_id TEXT PRIMARY KEY,
    input   BLOB NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER task_inputs_no_update BEFORE UPDATE ON task_inputs
BEGIN
    SELECT RAISE(ABORT, 'task input is immutable');
END;

CREATE TABLE idempotency_keys (
    tenant       TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;

-- A reservation holds one unit of pool capacity and one of the tenant's
-- limit until the task is terminal; released_at is set exactly once.
CREATE TABLE reservations (
    task_id     TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    pool        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    released_at INTEGER
) WITHOUT ROWID;

-- Append-only history of every transition.
CREATE TABLE task_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
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
BEGIN
    SELECT RAISE(ABORT, 'task events are append-only');
END;

CREATE TABLE evidence (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL,
    attempt    INTEGER NOT NULL,
    epoch      INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX evidence_task ON evidence (task_id, id);

-- Per (pool, tenant) count of ready queued tasks and the tenant's virtual
-- time (stride scheduling). Claim reads only tenants with ready work.
CREATE TABLE tenant_queues (
    pool   TEXT NOT NULL,
    tenant TEXT NOT NULL,
    queued INTEGER NOT NULL DEFAULT 0 CHECK (queued >= 0),
    vtime  REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (pool, tenant)
) WITHOUT ROWID;
CREATE INDEX tenant_queues_active ON tenant_queues (pool, vtime) WHERE queued > 0;

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
