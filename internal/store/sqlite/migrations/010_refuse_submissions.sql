-- A pause that also refuses submissions (see the PostgreSQL migration of
-- the same name).
ALTER TABLE flow_rules ADD COLUMN refuse_submissions INTEGER NOT NULL DEFAULT 0
    CHECK (refuse_submissions IN (0, 1) AND (paused = 1 OR refuse_submissions = 0));
