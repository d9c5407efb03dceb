-- A pause may also refuse submissions (POST /v1/admin/pause with
-- "refuse_submissions": true): every admission reads the rules that
-- refuse, in the statement that reads its gates (engine.Gates), so one
-- committed on any node refuses on every node from its commit on. Only a
-- paused rule refuses; a resume clears it.
ALTER TABLE flow_rules ADD COLUMN refuse_submissions boolean NOT NULL DEFAULT false
    CHECK (paused OR NOT refuse_submissions);
