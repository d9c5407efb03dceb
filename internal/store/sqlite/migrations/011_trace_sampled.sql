-- Whether the task's trace is sampled (see the PostgreSQL migration of the
-- same name).
ALTER TABLE tasks ADD COLUMN trace_sampled INTEGER NOT NULL DEFAULT 1 CHECK (trace_sampled IN (0, 1));
