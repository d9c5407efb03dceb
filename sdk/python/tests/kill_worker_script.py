"""A worker process for the SIGKILL integration test: it claims one task of
$DOCKET_WORKFLOW, prints "started <task id>" and then holds it until it is
killed."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import docket  # noqa: E402

worker = docket.Worker(
    os.environ["DOCKET_URL"], os.environ["DOCKET_WORKER_KEY"], slots=1, worker_id="py-doomed"
)


@worker.workflow(os.environ["DOCKET_WORKFLOW"])
def hold(task: docket.Task) -> dict:
    print("started", task.id, flush=True)
    task.cancelled.wait(3600)
    return {"by": "doomed"}


worker.run()
