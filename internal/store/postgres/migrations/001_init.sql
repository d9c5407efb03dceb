-- Docket schema for PostgreSQL. It mirrors the SQLite schema with native
-- types. Times are timestamptz written at millisecond precision. Identifiers
-- use the "C" collation so that ordering (UUIDv7 task IDs sort by creation,
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

CREATE TABLE tenants (
    id            text COLLATE "C" PRIMARY KEY,
    max_in_flight integer NOT NULL DEFAULT 0 CHECK (max_in_flight >= 0), -- 0: unlimited
    weight        integer NOT NULL DEFAULT 1 CHECK (weight >= 1),
    in_flight     integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),     -- live reservations
    created_at    timestamptz NOT NULL
);

CREATE TABLE api_keys (
    hash       text COLLATE "C" PRIMARY KEY, -- sha256 of the key; the key itself is never stored
    tenant     text COLLATE "C" NOT NULL REFERENCES tenants (id),
    principal  text NOT NULL,
    role       text NOT NULL CHECK (role IN ('member', 'admin')),
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

-- One row per pool: the live reservation counter checked by admission, and
-- the pool's virtual clock for fair (stride) dispatch. Its row lock also
-- serializes admissions and claims of one pool (see the package comment).
CREATE TABLE pools (
    name      text COLLATE "C" PRIMARY KEY,
    in_flight integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    vclock    double precision NOT NULL DEFAULT 0
);
INSERT INTO pools (name) VALUES ('online'), ('offline');

CREATE TABLE tasks (
    id               text COLLATE "C" PRIMARY KEY, -- UUIDv7: sorts by creation
    tenant           text COLLATE "C" NOT NULL,
    author           text NOT NULL,
    workflow         text NOT NULL,
    pool             text COLLATE "C" NOT NULL,
    state            text NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out')),
    priority         integer NOT NULL,
    attempt          integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
    lease_epoch      bigint NOT NULL DEFAULT 0 CHECK (lease_epoch >= 0),
    lease_owner      text,
    lease_expires_at timestamptz,
    run_after        timestamptz, -- NULL: ready; set: a delayed retry, promoted when due
    deadline_at      timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    trace_id         text NOT NULL,
    config_version   text NOT NULL,
    result           bytea,
    error_code       text
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
CREATE INDEX tasks_pool_state ON tasks (pool, state);

-- Input is immutable once admitted (R3): the schema refuses any UPDATE.
CREATE TABLE task_inputs (
    task_id text COLLATE "C" PRIMARY KEY,
    input   bytea NOT NULL
);
CREATE TRIGGER task_inputs_no_update BEFORE UPDATE ON task_inputs
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_change('task input is immutable');

CREATE TABLE idempotency_keys (
    tenant       text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    request_hash text NOT NULL,
    task_id      text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant, key)
);

-- A reservation holds one unit of pool capacity and one of the tenant's
-- limit until the task is terminal; released_at is set exactly once.
CREATE TABLE reservations (
    task_id     text COLLATE "C" PRIMARY KEY,
    tenant      text COLLATE "C" NOT NULL,
    pool        text COLLATE "C" NOT NULL,
    created_at  timestamptz NOT NULL,
    released_at timestamptz
);

-- Append-only history of every transition.
CREATE TABLE task_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_change('task events are append-only');
CREATE TRIGGER task_events_no_truncate BEFORE TRUNCATE ON task_events
    FOR EACH STATEMENT EXECUTE FUNCTION docket_refuse_change('task events are append-only');

CREATE TABLE evidence (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id    text COLLATE "C" NOT NULL,
    attempt    integer NOT NULL,
    epoch      bigint NOT NULL,
    kind       text NOT NULL,
    body       bytea NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX evidence_task ON evidence (task_id, id);

-- Per (pool, tenant) count of ready queued tasks and the tenant's virtual
-- time (stride scheduling). Claim reads only tenants with ready work. Only a
-- transaction holding the pool's row lock changes a pool's rows here.
CREATE TABLE tenant_queues (
    pool   text COLLATE "C" NOT NULL,
    tenant text COLLATE "C" NOT NULL,
    queued integer NOT NULL DEFAULT 0 CHECK (queued >= 0),
    vtime  double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (pool, tenant)
);
CREATE INDEX tenant_queues_active ON tenant_queues (pool, vtime, tenant) WHERE queued > 0;

CREATE TABLE rule_sets (
    seq          bigint PRIMARY KEY,
    version      text COLLATE "C" NOT NULL UNIQUE,
    hash         text NOT NULL,
    body         bytea NOT NULL,
    published_at timestamptz NOT NULL
);
CREATE TRIGGER rule_sets_no_update BEFORE UPDATE ON rule_sets
    FOR EACH ROW EXECUTE FUNCTION docket_refuse_change('rule sets are immutable');
