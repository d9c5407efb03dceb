-- Per-tenant storage quota (see docs/limits.md and the PostgreSQL migration
-- of the same name).
--
-- A tenant's stored bytes (inputs, results and evidence of its tasks, kept
-- until retention deletes them) are the sum of bytes over its counter
-- slots, written in the same transactions as the tasks: admission adds to
-- slot 0 (the gate it checks), results, evidence and deletions to slot 1.
-- storage_quota_bytes is the tenant's own quota: NULL takes the server's
-- default, 0 is unlimited.
ALTER TABLE tenants ADD COLUMN storage_quota_bytes INTEGER CHECK (storage_quota_bytes >= 0);
ALTER TABLE counters ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;

-- What the tenants keep already. Every tenant with a task has its gate row
-- (admission made it); made here too in case.
INSERT INTO counters (scope, key, slot) SELECT DISTINCT 'tenant', tenant, 0 FROM tasks WHERE true
    ON CONFLICT DO NOTHING;
UPDATE counters SET bytes =
        coalesce((SELECT sum(length(CAST(t.input AS BLOB))) FROM tasks t WHERE t.tenant = counters.key), 0)
      + coalesce((SELECT sum(length(CAST(r.result AS BLOB))) FROM task_results r WHERE r.tenant = counters.key), 0)
      + coalesce((SELECT sum(length(CAST(e.body AS BLOB))) FROM evidence e JOIN tasks t ON t.id = e.task_id
                  WHERE t.tenant = counters.key), 0)
    WHERE scope = 'tenant' AND slot = 0;
