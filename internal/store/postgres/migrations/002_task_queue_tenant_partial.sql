-- The tenant index of the live table serves a tenant's list of its queued
-- and running tasks. As a full index it could also answer id lookups (a
-- scan of the whole index with id as a filter), and when the statistics of
-- a just-vacuumed task_queue made that look cheap, the planner chose it
-- for the finish and lock statements: each then walked every entry, dead
-- ones included, and held claims and finishes for 5 to 8 s. Partial on a
-- condition every tenant query implies (tenant = $1 is strict) and no id
-- lookup does, it can serve only the lists.
DROP INDEX task_queue_tenant;
CREATE INDEX task_queue_tenant ON task_queue (tenant, id) WHERE tenant IS NOT NULL;
