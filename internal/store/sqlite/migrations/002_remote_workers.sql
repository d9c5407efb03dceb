-- Remote workers (see docs/worker-protocol.md and the PostgreSQL migration
-- of the same name).
--
-- A live task waits in a queue (store.Queue): its pool's own queue
-- ("online") for a workflow compiled into the server, "pool/workflow" for
-- a remote workflow. Capacity stays per pool; fair dispatch runs per queue.
ALTER TABLE task_queue RENAME COLUMN pool TO queue;
ALTER TABLE tenant_queues RENAME COLUMN pool TO queue;

-- A third role, worker, and worker keys for every tenant. SQLite changes a
-- CHECK constraint by rebuilding the table.
CREATE TABLE api_keys_new (
    id          TEXT PRIMARY KEY,
    hash        TEXT NOT NULL UNIQUE,
    tenant      TEXT NOT NULL REFERENCES tenants (id),
    principal   TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('member', 'admin', 'worker')),
    all_tenants INTEGER NOT NULL DEFAULT 0 CHECK (all_tenants IN (0, 1)),
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
) WITHOUT ROWID;
INSERT INTO api_keys_new (id, hash, tenant, principal, role, all_tenants, created_at, revoked_at)
    SELECT id, hash, tenant, principal, role, 0, created_at, revoked_at FROM api_keys;
DROP TABLE api_keys;
ALTER TABLE api_keys_new RENAME TO api_keys;
CREATE INDEX api_keys_tenant ON api_keys (tenant, id);

CREATE TABLE workflows (
    name         TEXT PRIMARY KEY,
    pool         TEXT NOT NULL CHECK (pool IN ('online', 'offline')),
    timeout_ms   INTEGER NOT NULL DEFAULT 0 CHECK (timeout_ms >= 0),
    max_attempts INTEGER NOT NULL DEFAULT 0 CHECK (max_attempts >= 0),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE workers (
    key_id       TEXT NOT NULL,
    id           TEXT NOT NULL,
    tenant       TEXT NOT NULL,
    all_tenants  INTEGER NOT NULL,
    workflows    TEXT NOT NULL, -- JSON array of names
    slots        INTEGER NOT NULL,
    leases       INTEGER NOT NULL,
    sdk          TEXT NOT NULL,
    last_seen_at INTEGER NOT NULL,
    PRIMARY KEY (key_id, id)
) WITHOUT ROWID;
CREATE INDEX workers_seen ON workers (last_seen_at);
