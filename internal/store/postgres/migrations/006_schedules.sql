-- Periodic schedules (see internal/queue/schedule_scheduler.go).
--
-- A schedule fires a task of its tenant at every time of its cron
-- expression. Every node's schedule scheduler reads the due schedules
-- (schedules_due) and admits each fire through the normal admission path
-- with an idempotency key made of the schedule and the fire time, then
-- moves next_fire_at on with a compare-and-set on version: one task per
-- schedule and fire time whatever the number of nodes, and no leader.
CREATE TABLE schedules (
    name           text COLLATE "C" PRIMARY KEY,
    tenant         text COLLATE "C" NOT NULL,
    workflow       text NOT NULL,
    input          bytea NOT NULL,
    cron           text NOT NULL,
    time_zone      text NOT NULL,
    pool           text NOT NULL CHECK (pool IN ('', 'online', 'offline')), -- '': the workflow's default
    timeout_ms     bigint NOT NULL CHECK (timeout_ms >= 0),
    max_attempts   integer NOT NULL CHECK (max_attempts >= 0),
    overlap        text NOT NULL CHECK (overlap IN ('allow', 'skip')),
    missed         text NOT NULL CHECK (missed IN ('skip', 'catch_up')),
    catch_up_limit integer NOT NULL CHECK (catch_up_limit >= 0),
    paused         boolean NOT NULL,
    next_fire_at   timestamptz NOT NULL,
    version        bigint NOT NULL CHECK (version >= 1),
    last_task_id   text COLLATE "C" NOT NULL DEFAULT '',
    last_fire_at   timestamptz,
    fired          bigint NOT NULL DEFAULT 0,
    missed_fires   bigint NOT NULL DEFAULT 0,
    skipped        bigint NOT NULL DEFAULT 0,
    last_error     text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
) WITH (fillfactor = 70); -- advanced in place every fire: room for HOT updates
-- The schedulers' scan: due schedules, earliest first.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE NOT paused;

-- The latest runs of each schedule (the fire transaction writes one and
-- prunes past the 20 latest).
CREATE TABLE schedule_runs (
    schedule text COLLATE "C" NOT NULL,
    fire_at  timestamptz NOT NULL,
    task_id  text COLLATE "C" NOT NULL,
    PRIMARY KEY (schedule, fire_at)
);
