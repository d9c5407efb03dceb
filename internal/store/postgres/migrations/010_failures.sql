-- Working with failures: retries and bulk actions (see
-- internal/store/engine/retry.go and internal/queue/bulk_scheduler.go).
--
-- A retry appends an event that names who asked: the API key's ID and
-- role (never the key). Other events leave both empty.
ALTER TABLE task_events ADD COLUMN actor_key text NOT NULL DEFAULT '';
ALTER TABLE task_events ADD COLUMN actor_role text NOT NULL DEFAULT '';

-- A bulk action (cancel, retry or delete every task matching a filter) is
-- a job that the bulk scheduler of any node advances in bounded batches,
-- in task ID order from task_cursor. A node works on a job only under its
-- lease (lease_owner until lease_expires_at), and every write compares the
-- version, so that two nodes never advance one job at once and a job whose
-- node died is taken over when its lease expires.
CREATE TABLE bulk_jobs (
    id               text COLLATE "C" PRIMARY KEY,
    action           text NOT NULL CHECK (action IN ('cancel', 'retry', 'delete')),
    filter           text NOT NULL, -- JSON: the filter as the client gave it
    tenant           text COLLATE "C" NOT NULL, -- the filter's tenant; '': every tenant (an admin's job)
    actor_key        text NOT NULL,
    actor_role       text NOT NULL,
    state            text NOT NULL CHECK (state IN ('running', 'done', 'cancelled')),
    matched          bigint NOT NULL DEFAULT 0,
    done             bigint NOT NULL DEFAULT 0,
    skipped          bigint NOT NULL DEFAULT 0,
    failed           bigint NOT NULL DEFAULT 0,
    task_cursor      text COLLATE "C" NOT NULL DEFAULT '',
    version          bigint NOT NULL CHECK (version >= 1),
    lease_owner      text NOT NULL DEFAULT '',
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    finished_at      timestamptz
);
CREATE INDEX bulk_jobs_running ON bulk_jobs (created_at, id) WHERE state = 'running';
