-- Whether the task's trace is sampled, as its admitting request decided
-- (the request span's W3C sampled flag: the caller's traceparent under a
-- parent-based sampler, or the sampler's own decision). The task's later
-- spans (the wait in the queue, each run, each fenced finish, a remote
-- worker's) follow it on whichever node writes them. Tasks admitted before
-- this column existed count as sampled, as they were.
ALTER TABLE tasks ADD COLUMN trace_sampled boolean NOT NULL DEFAULT true;
