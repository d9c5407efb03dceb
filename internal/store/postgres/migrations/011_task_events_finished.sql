-- The throughput of the service (GET /v1/admin/stats/throughput, the
-- dashboard's chart) counts the events to a terminal state per time bucket
-- over a recent window (engine.ThroughputSQL). This index holds those
-- events alone, by time: a count reads the window's range of it and
-- nothing else (an index-only scan once the table is vacuumed), whatever
-- the history holds. Only terminal events pay for it, one entry each.
--
-- Migrations run in one transaction, so the index is built there (not
-- CONCURRENTLY): on a large task_events table, finishing tasks waits while
-- it builds.
CREATE INDEX task_events_finished ON task_events (at, to_state)
    WHERE to_state IN ('succeeded', 'failed', 'timed_out', 'cancelled');
