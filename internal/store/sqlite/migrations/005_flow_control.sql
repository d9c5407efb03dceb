-- Flow control (see the PostgreSQL migration of the same name and
-- docs/flow-control.md). Times are Unix milliseconds. One writer at a
-- time: the token rows need no slots.
CREATE TABLE flow_rules (
    scope               TEXT NOT NULL CHECK (scope IN ('pool', 'tenant', 'workflow')),
    key                 TEXT NOT NULL,
    paused              INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    rate_per_second     INTEGER CHECK (rate_per_second >= 1),
    burst               INTEGER NOT NULL DEFAULT 0 CHECK (burst >= 0),
    concurrency_per_key INTEGER CHECK (concurrency_per_key >= 1),
    throttled_at        INTEGER,
    updated_at          INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;

ALTER TABLE tasks ADD COLUMN concurrency_key TEXT;
ALTER TABLE task_queue ADD COLUMN workflow TEXT NOT NULL DEFAULT '';
ALTER TABLE task_queue ADD COLUMN concurrency_key TEXT;
ALTER TABLE task_queue ADD COLUMN key_slot INTEGER NOT NULL DEFAULT 0 CHECK (key_slot IN (0, 1));
UPDATE task_queue SET workflow = (SELECT t.workflow FROM tasks t WHERE t.id = task_queue.id);
CREATE INDEX task_queue_key_wait ON task_queue (tenant, workflow, concurrency_key, priority DESC, id)
    WHERE concurrency_key IS NOT NULL AND key_slot = 0;

CREATE TABLE concurrency_keys (
    tenant   TEXT NOT NULL,
    workflow TEXT NOT NULL,
    key      TEXT NOT NULL,
    active   INTEGER NOT NULL DEFAULT 0 CHECK (active >= 0),
    PRIMARY KEY (tenant, workflow, key)
) WITHOUT ROWID;

CREATE TABLE flow_tokens (
    scope TEXT NOT NULL,
    key   TEXT NOT NULL,
    ring  INTEGER NOT NULL,
    slot  INTEGER NOT NULL,
    tick  INTEGER NOT NULL,
    used  INTEGER NOT NULL,
    PRIMARY KEY (scope, key, ring, slot)
) WITHOUT ROWID;
