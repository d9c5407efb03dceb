-- The store vacuums task_queue itself (vacuum.go) without giving its empty
-- tail pages back: they are refilled within the second, and truncating
-- takes an exclusive lock that stops every claim and finish while it is
-- held. Autovacuum, which still runs behind it, keeps them too.
ALTER TABLE task_queue SET (vacuum_truncate = false);
