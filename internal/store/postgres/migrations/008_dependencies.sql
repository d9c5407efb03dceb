-- Task dependencies (see internal/store/engine/dependencies.go and
-- docs/dependencies.md).
--
-- A task submitted with depends_on is admitted like any other (it takes its
-- unit of capacity and of its tenant's limit at once) and waits, queued,
-- until every task it depends on has succeeded. While it waits its live row
-- holds the number of dependencies not yet resolved (deps_pending > 0) and
-- a run_after far in the future, so that neither the claim index nor the
-- delayed index's promotion ever picks it; the transaction that resolves
-- its last dependency sets run_after to its run_at (or NULL: ready) in the
-- same commit. Fan-in is one counter decrement per finished dependency,
-- never a scan of the other dependencies.
--
-- has_dependents marks a live row that some task depends on, so that a
-- transaction ending a task looks for dependents only when there are some:
-- work without dependencies pays nothing.
ALTER TABLE task_queue ADD COLUMN deps_pending integer NOT NULL DEFAULT 0 CHECK (deps_pending >= 0);
ALTER TABLE task_queue ADD COLUMN deps_run boolean NOT NULL DEFAULT false; -- on_dependency_failure = "run"
ALTER TABLE task_queue ADD COLUMN has_dependents boolean NOT NULL DEFAULT false;

-- One row per edge, written with the dependent at admission and deleted
-- with it by retention. The primary key finds a finished task's dependents;
-- task_dependencies_task lists a task's dependencies in the order given.
CREATE TABLE task_dependencies (
    depends_on text COLLATE "C" NOT NULL,
    task_id    text COLLATE "C" NOT NULL,
    ord        integer NOT NULL,
    PRIMARY KEY (depends_on, task_id)
);
CREATE INDEX task_dependencies_task ON task_dependencies (task_id, ord);
