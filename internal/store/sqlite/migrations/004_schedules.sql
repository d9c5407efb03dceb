-- Periodic schedules (see the PostgreSQL migration of the same name and
-- internal/queue/schedule_scheduler.go). Times are Unix milliseconds.
CREATE TABLE schedules (
    name           TEXT PRIMARY KEY,
    tenant         TEXT NOT NULL,
    workflow       TEXT NOT NULL,
    input          BLOB NOT NULL,
    cron           TEXT NOT NULL,
    time_zone      TEXT NOT NULL,
    pool           TEXT NOT NULL CHECK (pool IN ('', 'online', 'offline')),
    timeout_ms     INTEGER NOT NULL CHECK (timeout_ms >= 0),
    max_attempts   INTEGER NOT NULL CHECK (max_attempts >= 0),
    overlap        TEXT NOT NULL CHECK (overlap IN ('allow', 'skip')),
    missed         TEXT NOT NULL CHECK (missed IN ('skip', 'catch_up')),
    catch_up_limit INTEGER NOT NULL CHECK (catch_up_limit >= 0),
    paused         INTEGER NOT NULL CHECK (paused IN (0, 1)),
    next_fire_at   INTEGER NOT NULL,
    version        INTEGER NOT NULL CHECK (version >= 1),
    last_task_id   TEXT NOT NULL DEFAULT '',
    last_fire_at   INTEGER,
    fired          INTEGER NOT NULL DEFAULT 0,
    missed_fires   INTEGER NOT NULL DEFAULT 0,
    skipped        INTEGER NOT NULL DEFAULT 0,
    last_error     TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE paused = 0;

CREATE TABLE schedule_runs (
    schedule TEXT NOT NULL,
    fire_at  INTEGER NOT NULL,
    task_id  TEXT NOT NULL,
    PRIMARY KEY (schedule, fire_at)
) WITHOUT ROWID;
