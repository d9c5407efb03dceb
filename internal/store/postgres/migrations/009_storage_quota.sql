-- Per-tenant storage quota (see docs/limits.md).
--
-- A tenant's stored bytes (inputs, results and evidence of its tasks, kept
-- until retention deletes them) are the sum of bytes over its counter
-- slots, written in the same transactions as the tasks: admission adds to
-- the gate slot it holds locked and checks, results, evidence and
-- deletions to the release slots, so no new row is locked by every finish.
-- storage_quota_bytes is the tenant's own quota: NULL takes the server's
-- default, 0 is unlimited.
ALTER TABLE tenants ADD COLUMN storage_quota_bytes bigint CHECK (storage_quota_bytes >= 0);
ALTER TABLE counters ADD COLUMN bytes bigint NOT NULL DEFAULT 0;

-- What the tenants keep already. Every tenant with a task has its gate row
-- (admission made it); made here too in case.
INSERT INTO counters (scope, key, slot) SELECT DISTINCT 'tenant', tenant, 0 FROM tasks
    ON CONFLICT DO NOTHING;
UPDATE counters c SET bytes =
        coalesce((SELECT sum(octet_length(t.input)) FROM tasks t WHERE t.tenant = c.key), 0)
      + coalesce((SELECT sum(octet_length(r.result)) FROM task_results r WHERE r.tenant = c.key), 0)
      + coalesce((SELECT sum(octet_length(e.body)) FROM evidence e JOIN tasks t ON t.id = e.task_id
                  WHERE t.tenant = c.key), 0)
    WHERE c.scope = 'tenant' AND c.slot = 0;
