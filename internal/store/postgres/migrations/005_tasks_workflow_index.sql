-- A list filtered by workflow (GET /v1/tasks?workflow=) reads the tenant's
-- tasks of that workflow, newest first, from this index: a page costs the
-- same whatever the tenant's other workflows hold. Every admission writes
-- one more index entry.
--
-- Migrations run in one transaction, so the index is built there (not
-- CONCURRENTLY): on a large tasks table, admissions wait while it builds.
CREATE INDEX tasks_tenant_workflow ON tasks (tenant, workflow, id);
