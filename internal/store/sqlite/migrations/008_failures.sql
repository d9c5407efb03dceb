-- Working with failures: retries and bulk actions (see the PostgreSQL
-- migration of the same name). Times are Unix milliseconds.
ALTER TABLE task_events ADD COLUMN actor_key TEXT NOT NULL DEFAULT '';
ALTER TABLE task_events ADD COLUMN actor_role TEXT NOT NULL DEFAULT '';

CREATE TABLE bulk_jobs (
    id               TEXT PRIMARY KEY,
    action           TEXT NOT NULL CHECK (action IN ('cancel', 'retry', 'delete')),
    filter           TEXT NOT NULL,
    tenant           TEXT NOT NULL,
    actor_key        TEXT NOT NULL,
    actor_role       TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('running', 'done', 'cancelled')),
    matched          INTEGER NOT NULL DEFAULT 0,
    done             INTEGER NOT NULL DEFAULT 0,
    skipped          INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    task_cursor      TEXT NOT NULL DEFAULT '',
    version          INTEGER NOT NULL CHECK (version >= 1),
    lease_owner      TEXT NOT NULL DEFAULT '',
    lease_expires_at INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER
) WITHOUT ROWID;
CREATE INDEX bulk_jobs_running ON bulk_jobs (created_at, id) WHERE state = 'running';
