"""The task a handler runs: the server's binding, its input, and its
cancellation signal."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any, Callable, Literal

from ._times import parse_time
from .errors import LeaseLost, TaskCancelled

__all__ = ["CancelReason", "Task"]

# CancelReason is why a task's ``cancelled`` event is set:
#   cancelled  - a client cancelled the task (POST /v1/tasks/{id}/cancel)
#   timed_out  - the task's deadline passed (seen locally or by the server)
#   lease_lost - the lease is no longer current (recovered after missed
#                heartbeats, or refused by the server)
#   shutdown   - the worker is stopping and hands the lease back
CancelReason = Literal["cancelled", "timed_out", "lease_lost", "shutdown"]

# Lifecycle of a claimed task inside the worker.
_RUNNING = 0  # the handler runs
_DONE = 1  # the handler returned; its outcome is (being) sent
_CANCELLED = 2  # cancelled before the handler returned: its outcome is dropped

# Reasons after which the server refuses every write of the lease.
_FENCED = ("cancelled", "timed_out", "lease_lost")

EvidenceWriter = Callable[["Task", str, Any], None]
DependencyReader = Callable[["Task"], "list[dict[str, Any]]"]


class Task:
    """One claimed task, as its handler sees it.

    Attributes (the binding the server made at claim time):
        id, tenant, author, workflow, pool, attempt, max_attempts,
        deadline_at (aware datetime, or None), trace_id, config_version.
    traceparent: the W3C traceparent of the task's span in its trace ("" when
        the server sent none): a handler that traces makes its span of the
        attempt a child of it (e.g. with OpenTelemetry's
        ``TraceContextTextMapPropagator().extract({"traceparent": ...})``),
        so that the attempt joins the trace of the request that submitted
        the task.
    input: the task's input, parsed JSON, exactly as admitted.
    cancelled: a ``threading.Event`` set when the task must stop; see
        ``cancel_reason``. A handler checks it (``task.cancelled.is_set()``),
        waits on it (``task.cancelled.wait(5)`` instead of ``time.sleep(5)``),
        or calls ``raise_if_cancelled()``. Once it is set, the handler's
        outcome is dropped: nothing is sent for it.
    """

    __slots__ = (
        "id",
        "tenant",
        "author",
        "workflow",
        "pool",
        "attempt",
        "max_attempts",
        "deadline_at",
        "trace_id",
        "config_version",
        "traceparent",
        "input",
        "cancelled",
        "_lease",
        "_deadline",
        "_reason",
        "_state",
        "_lock",
        "_writer",
        "_reader",
        "_renewed",
        "_beaten",
        "_held",
    )

    def __init__(
        self,
        lease: str,
        task: dict[str, Any],
        input: Any,
        *,
        writer: EvidenceWriter | None = None,
        traceparent: str = "",
        reader: DependencyReader | None = None,
    ) -> None:
        self.id: str = str(task.get("id", ""))
        self.tenant: str = str(task.get("tenant", ""))
        self.author: str = str(task.get("author", ""))
        self.workflow: str = str(task.get("workflow", ""))
        self.pool: str = str(task.get("pool", ""))
        self.attempt: int = int(task.get("attempt") or 0)
        self.max_attempts: int = int(task.get("max_attempts") or 0)
        self.deadline_at: datetime | None = parse_time(task.get("deadline_at"))
        self.trace_id: str = str(task.get("trace_id") or "")
        self.config_version: str = str(task.get("config_version") or "")
        self.traceparent: str = traceparent if isinstance(traceparent, str) else ""
        self.input: Any = input
        self.cancelled = threading.Event()
        self._lease = lease
        self._deadline = self.deadline_at.timestamp() if self.deadline_at else None
        self._reason: str | None = None
        self._state = _RUNNING
        self._lock = threading.Lock()
        self._writer = writer
        self._reader = reader
        # Worker bookkeeping: monotonic time of the last renewal (claim or
        # ok heartbeat), whether a heartbeat has covered it yet, and
        # whether the worker still holds the lease.
        self._renewed = time.monotonic()
        self._beaten = False
        self._held = True

    @property
    def cancel_reason(self) -> CancelReason | None:
        """Why ``cancelled`` is set: ``cancelled``, ``timed_out``,
        ``lease_lost`` or ``shutdown``; None while it is not."""
        return self._reason  # type: ignore[return-value]

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled.is_set()

    def raise_if_cancelled(self) -> None:
        """Raises TaskCancelled when the task must stop."""
        if self.cancelled.is_set():
            raise TaskCancelled(self._reason or "cancelled")

    def time_left(self) -> float | None:
        """Seconds until the task's deadline (negative once passed), or None
        when it has none."""
        if self._deadline is None:
            return None
        return self._deadline - time.time()

    def evidence(self, kind: str, body: Any) -> None:
        """Appends one evidence item under this attempt's lease.

        ``body`` must be JSON-serialisable. Raises LeaseLost when the lease
        is no longer current (nothing was written), DocketError when the
        server could not be reached after a few tries. An evidence write
        whose answer is lost is sent again, so an item may, rarely, be
        stored twice.
        """
        if not isinstance(kind, str) or not kind:
            raise ValueError("docket: evidence kind must be a non-empty string")
        if self._reason in _FENCED:
            raise LeaseLost()
        if self._writer is None:
            raise RuntimeError("docket: this task has no evidence writer (not claimed by a Worker)")
        self._writer(self, kind, body)

    def dependency_results(self) -> list[dict[str, Any]]:
        """The outcome of each task this one depends on (``depends_on`` at
        submission), in the order given: dicts with ``id``, ``state`` and,
        once terminal, ``result`` or ``error`` (fan-in). The task runs only
        once every dependency succeeded, unless it was submitted with
        ``on_dependency_failure`` "run". Empty for a task without
        dependencies. Raises LeaseLost when the server refuses the lease.
        """
        if self._reader is None:
            raise RuntimeError("docket: this task has no dependency reader (not claimed by a Worker)")
        return self._reader(self)

    def dependency_result(self, task_id: str) -> dict[str, Any]:
        """The outcome of one task this one depends on; KeyError when it is
        not one of them."""
        for d in self.dependency_results():
            if d.get("id") == task_id:
                return d
        raise KeyError(task_id)

    def __repr__(self) -> str:
        # Never the input: a repr may end up in a log line.
        return (
            f"Task(id={self.id!r}, workflow={self.workflow!r}, tenant={self.tenant!r}, "
            f"attempt={self.attempt}, cancel_reason={self._reason!r})"
        )

    # --- used by the worker -------------------------------------------------

    def _cancel(self, reason: str) -> bool:
        """Cancels a running task; True if it was running (its outcome will
        now be dropped)."""
        with self._lock:
            if self._state != _RUNNING:
                return False
            self._state = _CANCELLED
            self._reason = reason
        self.cancelled.set()
        return True

    def _complete(self) -> bool:
        """Marks the handler returned; False when the task was cancelled
        first (drop the outcome)."""
        with self._lock:
            if self._state != _RUNNING:
                return False
            self._state = _DONE
            return True

    @property
    def _running(self) -> bool:
        return self._state == _RUNNING
