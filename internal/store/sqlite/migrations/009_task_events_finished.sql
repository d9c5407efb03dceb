-- The throughput of the service counts the events to a terminal state per
-- time bucket over a recent window from this index alone (a covering
-- range scan), whatever the history holds. Only terminal events pay for
-- it. (The PostgreSQL migration of the same name.)
CREATE INDEX task_events_finished ON task_events (at, to_state)
    WHERE to_state IN ('succeeded', 'failed', 'timed_out', 'cancelled');
