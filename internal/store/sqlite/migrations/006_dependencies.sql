-- Task dependencies (see the PostgreSQL migration of the same name and
-- internal/store/engine/dependencies.go). A waiting task has
-- deps_pending > 0 and a run_after far in the future.
ALTER TABLE task_queue ADD COLUMN deps_pending INTEGER NOT NULL DEFAULT 0 CHECK (deps_pending >= 0);
ALTER TABLE task_queue ADD COLUMN deps_run INTEGER NOT NULL DEFAULT 0 CHECK (deps_run IN (0, 1));
ALTER TABLE task_queue ADD COLUMN has_dependents INTEGER NOT NULL DEFAULT 0 CHECK (has_dependents IN (0, 1));

CREATE TABLE task_dependencies (
    depends_on TEXT NOT NULL,
    task_id    TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    PRIMARY KEY (depends_on, task_id)
) WITHOUT ROWID;
CREATE INDEX task_dependencies_task ON task_dependencies (task_id, ord);
