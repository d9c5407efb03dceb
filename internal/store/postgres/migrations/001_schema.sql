-- Docket schema for PostgreSQL (see internal/store/engine for the model).
-- Times are timestamptz written at millisecond precision. Identifiers use
-- the "C" collation so that ordering (UUIDv7 task IDs sort by creation,
-- keyset pagination) is byte order whatever the database's locale.
-- Payloads (input, result, evidence and rule set bodies) are bytea: input
-- must round-trip byte for byte, and jsonb would refuse some valid JSON
-- (a "\u0000" escape) that a workflow may legitimately return.

-- Raises on any statement it guards: immutable and append-only tables.
CREATE FUNCTION docket_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
END;
$$;

-- Like docket_refuse_change, except inside the retention cleaner's
-- transaction (SET LOCAL docket.retention = 'on'): finished histories may
-- be deleted whole, never edited.
CREATE FUNCTION docket_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('docket.retention', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TABLE tenants (
    id            text COLLATE "C" PRIMARY KEY,
    max_in_flight integer NOT NULL DEFAULT 0 CHECK (max_in_flight >= 0), -- 0: unlimited
    weight        integer NOT NULL DEFAULT 1 CHECK (weight >= 1),
    created_at    timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    hash       text COLLATE "C" NOT NULL UNIQUE, -- sha256 of the key; the key itself is never stored
    tenant     text COLLATE "C" NOT NULL REFERENCES tenants (id),
    principal  text NOT NULL,
    role       text NOT NULL CHECK (role IN ('member', 'admin')),
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant, id);

-- In-flight (non-terminal) tasks per pool and per tenant: the sum of a
-- key's slots. Slot 0 is the gate: admission locks it, checks the sum and
-- adds what it admitted. Releases go to slots 1–16, picked at random, so
-- that finishing work on several nodes neither waits for admission nor
-- for each other. Small rows updated in place: HOT updates need free space.
CREATE TABLE counters (
    scope text COLLATE "C" NOT NULL CHECK (scope IN ('pool', 'tenant')),
    key   text COLLATE "C" NOT NULL,
    slot  smallint NOT NULL CHECK (slot BETWEEN 0 AND 16),
    n     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, key, slot)
) WITH (fillfactor = 50);
INSERT INTO counters (scope, key, slot) VALUES ('pool', 'online', 0), ('pool', 'offline', 0);

-- What was admitted, with its input: immutable (R3), written once.
CREATE TABLE tasks (
    id              text COLLATE "C" PRIMARY KEY, -- UUIDv7: sorts by creation
    tenant          text COLLATE "C" NOT NULL,
    idempotency_key text COLLATE "C" NOT NULL,
    author          text NOT NULL,
    workflow        text NOT NULL,
    pool            text COLLATE "C" NOT NULL,
    priority        integer NOT NULL,
    max_attempts    integer NOT NULL CHECK (max_attempts >= 1),
    deadline_at     timestamptz NOT NULL,
    run_at          timestamptz,
    created_at      timestamptz NOT NULL,
    trace_id        text NOT NULL,
    config_version  text NOT NULL,
    input           bytea NOT NULL
);
-- Listing, newest first.
CREATE INDEX tasks_tenant ON tasks (tenant, id);
CREATE TRIGGER tasks_no_update BEFORE UPDATE ON tasks
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_change('a task and its input are immutable');

-- The live tasks: queued or running. A row leaves in the transaction that
-- makes its task terminal, so these indexes hold live work only and every
-- claim, recovery and deadline scan costs the same whatever the history
-- holds. Vacuumed early and often: each claim leaves a dead row version.
CREATE TABLE task_queue (
    id               text COLLATE "C" PRIMARY KEY,
    tenant           text COLLATE "C" NOT NULL,
    pool             text COLLATE "C" NOT NULL,
    priority         integer NOT NULL,
    state            text NOT NULL CHECK (state IN ('queued', 'running')),
    attempt          integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     integer NOT NULL,
    lease_epoch      bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0),
    lease_owner      text,
    lease_expires_at timestamptz,
    run_after        timestamptz, -- NULL: ready; set: delayed (a retry, or run_at), promoted when due
    deadline_at      timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    error_code       text, -- the last attempt's failure, while the task is retried
    error_message    text
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 10000,
        autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0);
-- Claim: a tenant's ready tasks in dispatch order.
CREATE INDEX task_queue_claim ON task_queue (pool, tenant, priority DESC, id) WHERE state = 'queued' AND run_after IS NULL;
-- Promotion of delayed tasks that are due.
CREATE INDEX task_queue_delayed ON task_queue (pool, run_after) WHERE state = 'queued' AND run_after IS NOT NULL;
-- Recovery: expired leases.
CREATE INDEX task_queue_lease ON task_queue (lease_expires_at) WHERE state = 'running';
-- Deadline enforcement.
CREATE INDEX task_queue_deadline ON task_queue (deadline_at);
-- Listing a tenant's live tasks by state.
CREATE INDEX task_queue_tenant ON task_queue (tenant, id);

-- One row per terminal task, written once.
CREATE TABLE task_results (
    task_id       text COLLATE "C" PRIMARY KEY,
    tenant        text COLLATE "C" NOT NULL,
    state         text NOT NULL CHECK (state IN ('succeeded', 'failed', 'cancelled', 'timed_out')),
    attempt       integer NOT NULL,
    lease_epoch   bigint NOT NULL,
    started_at    timestamptz,
    finished_at   timestamptz NOT NULL,
    result        bytea,
    error_code    text,
    error_message text
);
-- Listing a tenant's finished tasks by state.
CREATE INDEX task_results_tenant_state ON task_results (tenant, state, task_id);
CREATE TRIGGER task_results_no_update BEFORE UPDATE ON task_results
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_change('a task result is immutable');

CREATE TABLE idempotency_keys (
    tenant       text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    request_hash text NOT NULL,
    task_id      text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant, key)
);

-- Append-only history of every transition. The (task_id, id) index serves
-- every read; a primary key would be a second index written per event.
CREATE TABLE task_events (
    id         bigint GENERATED ALWAYS AS IDENTITY,
    task_id    text COLLATE "C" NOT NULL,
    from_state text NOT NULL, -- '' for the admission event
    to_state   text NOT NULL,
    epoch      bigint NOT NULL,
    code       text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL
);
CREATE INDEX task_events_task ON task_events (task_id, id);
CREATE TRIGGER task_events_no_update BEFORE UPDATE ON task_events
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_change('task events are append-only');
CREATE TRIGGER task_events_no_delete BEFORE DELETE ON task_events
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_delete('task events are append-only');
CREATE TRIGGER task_events_no_truncate BEFORE TRUNCATE ON task_events
    FOR EACH STATEMENT EXECUTE FUNCTION docket_refuse_change('task events are append-only');

CREATE TABLE evidence (
    id         bigint GENERATED ALWAYS AS IDENTITY,
    task_id    text COLLATE "C" NOT NULL,
    attempt    integer NOT NULL,
    epoch      bigint NOT NULL,
    kind       text NOT NULL,
    body       bytea NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX evidence_task ON evidence (task_id, id);

-- Per (pool, tenant): the number of ready tasks and the tenant's virtual
-- time (stride scheduling). Claims read only tenants with ready work.
CREATE TABLE tenant_queues (
    pool   text COLLATE "C" NOT NULL,
    tenant text COLLATE "C" NOT NULL,
    queued integer NOT NULL DEFAULT 0 CHECK (queued >= 0),
    vtime  double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (pool, tenant)
) WITH (fillfactor = 50);
CREATE INDEX tenant_queues_active ON tenant_queues (pool, vtime, tenant) WHERE queued > 0;
CREATE INDEX tenant_queues_vtime ON tenant_queues (pool, vtime);

CREATE TABLE rule_sets (
    seq          bigint PRIMARY KEY,
    version      text COLLATE "C" NOT NULL UNIQUE,
    hash         text NOT NULL,
    body         bytea NOT NULL,
    published_at timestamptz NOT NULL
);
CREATE TRIGGER rule_sets_no_update BEFORE UPDATE ON rule_sets
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_change('rule sets are immutable');
