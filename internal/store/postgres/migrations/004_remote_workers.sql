-- Remote workers (see docs/worker-protocol.md).
--
-- A live task waits in a queue (store.Queue): its pool's own queue
-- ("online") for a workflow compiled into the server, "pool/workflow" for
-- a remote workflow, which only remote workers serving that workflow
-- claim. Capacity stays per pool (counters); fair dispatch runs per queue.
ALTER TABLE task_queue RENAME COLUMN pool TO queue;
ALTER TABLE tenant_queues RENAME COLUMN pool TO queue;

-- A third role: worker keys claim and finish tasks, of one tenant or, with
-- all_tenants, of every tenant.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_role_check CHECK (role IN ('member', 'admin', 'worker'));
ALTER TABLE api_keys ADD COLUMN all_tenants boolean NOT NULL DEFAULT false;

-- Remote workflows an admin registered: the only names remote workers can
-- claim and clients can submit besides the built-in ones.
CREATE TABLE workflows (
    name         text COLLATE "C" PRIMARY KEY,
    pool         text NOT NULL CHECK (pool IN ('online', 'offline')),
    timeout_ms   bigint NOT NULL DEFAULT 0 CHECK (timeout_ms >= 0),   -- 0: the server's default
    max_attempts integer NOT NULL DEFAULT 0 CHECK (max_attempts >= 0), -- 0: the server's default
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- Installation-wide secrets, made once by the first node that needs one
-- (the key lease tokens are signed with).
CREATE TABLE settings (
    name  text COLLATE "C" PRIMARY KEY,
    value bytea NOT NULL
);

-- The remote workers the nodes have seen, flushed by each node every few
-- seconds, so that an operator sees every node's workers in one list.
CREATE TABLE workers (
    key_id       text COLLATE "C" NOT NULL,
    id           text COLLATE "C" NOT NULL,
    tenant       text COLLATE "C" NOT NULL,
    all_tenants  boolean NOT NULL,
    workflows    text NOT NULL, -- JSON array of names
    slots        integer NOT NULL,
    leases       integer NOT NULL,
    sdk          text NOT NULL,
    last_seen_at timestamptz NOT NULL,
    PRIMARY KEY (key_id, id)
);
CREATE INDEX workers_seen ON workers (last_seen_at);
