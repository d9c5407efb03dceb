"""Docket's Python SDK: run remote workflows in a Worker, submit and follow
tasks with a Client. Standard library only.

    import docket

    worker = docket.Worker("http://127.0.0.1:8080", WORKER_KEY, slots=4)

    @worker.workflow("py.hello")
    def hello(task: docket.Task) -> dict:
        return {"greeting": "hello " + task.input["name"]}

    worker.run(install_signal_handlers=True)

The protocol it speaks is docs/worker-protocol.md. Logs go to the
``docket`` logger (``docket.worker``); they carry task IDs, workflow names
and error codes, never inputs, results, evidence or failure messages.
"""

import logging as _logging

from ._version import SDK, __version__
from .client import (
    TERMINAL_STATES,
    BatchResult,
    Client,
    Event,
    Evidence,
    TaskError,
    TaskInfo,
    TenantLimits,
    WorkflowLimits,
)
from .errors import CONNECTION_ERROR, DocketError, LeaseLost, TaskCancelled, TaskFailure
from .task import CancelReason, Task
from .worker import Handler, Worker

__all__ = [
    "BatchResult",
    "CONNECTION_ERROR",
    "CancelReason",
    "Client",
    "DocketError",
    "Event",
    "Evidence",
    "Handler",
    "LeaseLost",
    "SDK",
    "TERMINAL_STATES",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskFailure",
    "TaskInfo",
    "TenantLimits",
    "Worker",
    "WorkflowLimits",
    "__version__",
]

_logging.getLogger("docket").addHandler(_logging.NullHandler())
