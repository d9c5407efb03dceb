-- Flow control: pauses, rate limits on starts, concurrency keys (see
-- docs/flow-control.md and internal/store/engine/flow.go).
--
-- One rule per pool, tenant or workflow. Every claim reads the rules that
-- pause or rate-limit anything (a handful of rows, read without a lock in
-- the claim's first statement); with none, the claim is the plain one.
CREATE TABLE flow_rules (
    scope               text COLLATE "C" NOT NULL CHECK (scope IN ('pool', 'tenant', 'workflow')),
    key                 text COLLATE "C" NOT NULL,
    paused              boolean NOT NULL DEFAULT false,
    rate_per_second     integer CHECK (rate_per_second >= 1), -- NULL: no rate limit
    burst               integer NOT NULL DEFAULT 0 CHECK (burst >= 0),
    concurrency_per_key integer CHECK (concurrency_per_key >= 1), -- NULL: 1
    throttled_at        timestamptz, -- a claim last found the rate limit exhausted
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);

-- A task's concurrency key, immutable like the rest of its record.
ALTER TABLE tasks ADD COLUMN concurrency_key text COLLATE "C";
-- The live row carries its workflow (claims leave out paused and
-- throttled workflows of a pool's queue) and its key. key_slot: the task
-- holds one of its key's slots (queued or running); a keyed task without
-- one waits with run_after 9999-12-31, out of the claim and promotion
-- indexes, until a release gives it a slot.
ALTER TABLE task_queue ADD COLUMN workflow text NOT NULL DEFAULT '';
ALTER TABLE task_queue ADD COLUMN concurrency_key text COLLATE "C";
ALTER TABLE task_queue ADD COLUMN key_slot boolean NOT NULL DEFAULT false;
UPDATE task_queue q SET workflow = t.workflow FROM tasks t WHERE t.id = q.id;
-- The tasks waiting on a key, in dispatch order.
CREATE INDEX task_queue_key_wait ON task_queue (tenant, workflow, concurrency_key, priority DESC, id)
    WHERE concurrency_key IS NOT NULL AND NOT key_slot;

-- Per concurrency key: the slots its tasks hold. Locked by the
-- transactions that admit or end a task of that key only.
CREATE TABLE concurrency_keys (
    tenant   text COLLATE "C" NOT NULL,
    workflow text COLLATE "C" NOT NULL,
    key      text COLLATE "C" NOT NULL,
    active   integer NOT NULL DEFAULT 0 CHECK (active >= 0),
    PRIMARY KEY (tenant, workflow, key)
) WITH (fillfactor = 50);

-- Rate-limit tokens: the starts each limit gave in each 20 ms tick, spread
-- over slots (each a share of the tick's allowance) that claims take with
-- a try-lock, never waiting. A ring of 128 ticks per limit and slot: a row
-- is reused when its tick is past, so the table stays small.
CREATE TABLE flow_tokens (
    scope text COLLATE "C" NOT NULL,
    key   text COLLATE "C" NOT NULL,
    ring  smallint NOT NULL,
    slot  smallint NOT NULL,
    tick  bigint NOT NULL,
    used  integer NOT NULL,
    PRIMARY KEY (scope, key, ring, slot)
) WITH (fillfactor = 50);

-- Takes up to p_want of a limit's p_cap starts in tick p_tick, trying the
-- slots from a random one. A slot is taken only under its advisory lock,
-- tried without waiting (pg_try_advisory_xact_lock): a slot another claim
-- holds is skipped, and no two transactions write one slot of one tick at
-- once, so the slots' counts never sum past p_cap. A row of a later tick
-- (a claim whose clock is behind) gives nothing.
CREATE FUNCTION docket_take_tokens(p_scope text, p_key text, p_tick bigint, p_cap integer, p_want integer)
RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    slots   constant integer := 4;
    v_ring  constant integer := (p_tick % 128)::integer;
    v_first constant integer := floor(random() * slots)::integer;
    v_lock  constant integer := hashtext(p_scope || '/' || p_key);
    got     integer := 0;
    s       integer;
    share   integer;
    r_tick  bigint;
    r_used  integer;
    n       integer;
BEGIN
    FOR i IN 0 .. slots - 1 LOOP
        EXIT WHEN got >= p_want;
        s := (v_first + i) % slots;
        share := ((s + 1) * p_cap) / slots - (s * p_cap) / slots;
        CONTINUE WHEN share <= 0;
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(v_lock, v_ring * slots + s);
        SELECT tick, used INTO r_tick, r_used FROM flow_tokens
            WHERE scope = p_scope AND key = p_key AND ring = v_ring AND slot = s;
        IF NOT FOUND OR r_tick < p_tick THEN
            r_used := 0;
        ELSIF r_tick > p_tick THEN
            CONTINUE;
        END IF;
        n := LEAST(share - r_used, p_want - got);
        CONTINUE WHEN n <= 0;
        INSERT INTO flow_tokens (scope, key, ring, slot, tick, used) VALUES (p_scope, p_key, v_ring, s, p_tick, r_used + n)
            ON CONFLICT (scope, key, ring, slot) DO UPDATE SET tick = excluded.tick, used = excluded.used;
        got := got + n;
    END LOOP;
    RETURN got;
END;
$$;
