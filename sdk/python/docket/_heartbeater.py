"""The heartbeater: one call renews every lease the worker holds.

It sends the first heartbeat at once after a claim (but no sooner than half
an interval after the previous call, so a worker that claims continuously
does not flood the server), then one call per ``heartbeat_ms`` for all held
leases. Any status other
than ``ok`` cancels the task with that status as its reason, and the lease
is no longer held. It also enforces two local limits on running tasks: the
task's deadline (reason ``timed_out``) and a lease that no heartbeat renewed
within the lease TTL (reason ``lease_lost``: the server has, or soon will
have, recovered it).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ._backoff import Backoff
from ._http import Connection, encode, error_of
from ._lease_table import LeaseTable
from .errors import DocketError
from .task import Task

# MAX_LEASES is the most leases one heartbeat call may carry.
MAX_LEASES = 10_000

_STOP_STATUSES = ("cancelled", "timed_out", "lease_lost")


class Heartbeater:
    """Renews the leases of a LeaseTable on its own thread and connection."""

    def __init__(
        self,
        conn: Connection,
        leases: LeaseTable,
        *,
        worker_id: str,
        log: logging.Logger,
        on_cancel: Callable[[Task, str], None],
        interval: float = 1.0,
        ttl: float = 30.0,
        timeout: float = 30.0,
    ) -> None:
        self._timeout = timeout
        self._conn = conn
        self._leases = leases
        self._worker_id = worker_id
        self._log = log
        self._on_cancel = on_cancel
        self._interval = interval
        self._ttl = ttl
        self._cond = threading.Condition()
        self._poked = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._next_due = 0.0  # monotonic time of the next regular call
        self._min_next = 0.0  # earliest monotonic time of an early call
        self._backoff = Backoff(0.1, 2.0)
        self.calls = 0  # heartbeat calls answered (for stats)

    def set_timing(self, heartbeat_ms: object, lease_ttl_ms: object) -> None:
        """Takes the timing of a claim answer."""
        if isinstance(heartbeat_ms, (int, float)) and heartbeat_ms > 0:
            self._interval = heartbeat_ms / 1000.0
        if isinstance(lease_ttl_ms, (int, float)) and lease_ttl_ms > 0:
            self._ttl = lease_ttl_ms / 1000.0

    @property
    def _min_gap(self) -> float:
        return self._interval * 0.5

    @property
    def _call_timeout(self) -> float:
        # A call that hangs must not outlive the leases it renews: give up
        # after a third of the TTL and try again on a new connection.
        return max(min(self._timeout, self._ttl / 3), 1.0)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="docket-heartbeat", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """New leases were claimed: heartbeat them soon."""
        with self._cond:
            self._poked = True
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
        self._conn.close()

    def _loop(self) -> None:
        wake = time.monotonic()
        while True:
            with self._cond:
                while not self._stopping and not self._poked:
                    left = wake - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._stopping:
                    return
                self._poked = False
            try:
                wake = self._tick()
            except Exception as exc:  # never let the loop die; log the class only
                self._log.error("heartbeat loop error: %s", type(exc).__name__)
                wake = time.monotonic() + self._interval

    def _tick(self) -> float:
        """Checks deadlines and local expiry, sends a heartbeat when due;
        returns the monotonic time to wake up next."""
        now = time.monotonic()
        wall = time.time()
        wake = now + self._interval
        fresh = False
        held: list[Task] = []
        for task in self._leases.snapshot():
            if task._running and task._deadline is not None:
                if task._deadline <= wall:
                    self._drop(task, "timed_out")
                    continue
                wake = min(wake, now + (task._deadline - wall))
            if now - task._renewed > self._ttl:
                # No heartbeat renewed it within the TTL: the server has
                # (or will have) recovered the task.
                self._drop(task, "lease_lost")
                continue
            if task._running and not task._beaten:
                fresh = True
            held.append(task)
        if not held:
            return wake
        due = now >= self._next_due or (fresh and now >= self._min_next)
        if due:
            self._send(held, now)
            now = time.monotonic()
        wake = min(wake, self._next_due)
        if fresh and not due:
            wake = min(wake, self._min_next)
        return max(wake, now + 0.001)

    def _drop(self, task: Task, reason: str) -> None:
        self._leases.remove(task._lease)
        if task._cancel(reason):
            self._on_cancel(task, reason)

    def _send(self, held: list[Task], started: float) -> None:
        by_lease = {t._lease: t for t in held}
        leases = list(by_lease)
        try:
            for i in range(0, len(leases), MAX_LEASES):
                chunk = leases[i : i + MAX_LEASES]
                body = encode({"leases": chunk, "worker_id": self._worker_id})
                answer = self._conn.request(
                    "POST", "/v1/worker/heartbeat", body, timeout=self._call_timeout
                )
                if not 200 <= answer.status <= 299:
                    raise error_of(answer)
                self._apply(answer.json(), by_lease, started)
        except DocketError as err:
            delay = min(self._backoff.next(err.retry_after or 0.0), self._interval)
            self._log.warning(
                "heartbeat failed, retrying in %.2fs: code=%s status=%s",
                delay,
                err.code,
                err.status,
            )
            self._next_due = self._min_next = time.monotonic() + delay
            return
        except ValueError:
            self._log.warning("heartbeat answer is not JSON, retrying")
            self._next_due = self._min_next = time.monotonic() + self._interval / 2
            return
        self._backoff.reset()
        self.calls += 1
        self._next_due = started + self._interval
        self._min_next = started + self._min_gap

    def _apply(self, answer: object, by_lease: dict[str, Task], started: float) -> None:
        items = answer.get("leases") if isinstance(answer, dict) else None
        if not isinstance(items, list):
            raise ValueError("heartbeat answer has no leases")
        for item in items:
            if not isinstance(item, dict):
                continue
            task = by_lease.get(item.get("lease"))  # type: ignore[arg-type]
            if task is None:
                continue
            status = item.get("status")
            if status == "ok":
                task._renewed = started
                task._beaten = True
                continue
            if status not in _STOP_STATUSES:
                self._log.warning(
                    "unknown heartbeat status, treating the lease as lost: task_id=%s",
                    task.id,
                )
                status = "lease_lost"
            self._drop(task, str(status))
