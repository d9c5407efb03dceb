"""The finisher: sends outcomes in batches of up to 1,000 items.

Outcomes queue up while a call is in flight and go together in the next
one, so a busy worker sends few calls and an idle one adds no delay. A call
that gets no answer is sent again with backoff: finishing is idempotent (an
item sent again after it committed is ``ok``). ``conflict`` and
``lease_lost`` are final; the item is dropped and logged without payload.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass

from ._backoff import Backoff
from ._http import Connection, encode, error_of, retryable
from ._lease_table import LeaseTable
from .errors import DocketError
from .task import Task

# MAX_ITEMS is the most items one finish call may carry.
MAX_ITEMS = 1000


@dataclass
class Outcome:
    """One finish item, encoded once by the slot that produced it."""

    task: Task
    item: str  # the item's JSON
    succeeded: bool


class Finisher:
    """Sends outcomes on its own thread and connection."""

    def __init__(self, conn: Connection, leases: LeaseTable, *, log: logging.Logger) -> None:
        self._conn = conn
        self._leases = leases
        self._log = log
        self._cond = threading.Condition()
        self._queue: deque[Outcome] = deque()
        self._busy = False
        self._stopping = False
        self._abandon = threading.Event()
        self._thread: threading.Thread | None = None
        # Counters, read by Worker.stats.
        self.ok = 0
        self.conflict = 0
        self.lease_lost = 0
        self.dropped = 0
        self.calls = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="docket-finish", daemon=True)
        self._thread.start()

    def put(self, outcome: Outcome) -> None:
        with self._cond:
            self._queue.append(outcome)
            if not self._busy:
                self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + (1 if self._busy else 0)

    def flush(self, timeout: float) -> bool:
        """Waits until every queued outcome got a final answer, or timeout
        seconds; True if all did."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def stop(self) -> None:
        """Ends the thread; outcomes still queued are given up (logged)."""
        self._abandon.set()
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._conn.abort()
        if self._thread is not None:
            self._thread.join()
        self._conn.close()
        with self._cond:
            left = len(self._queue)
            self._queue.clear()
        if left:
            self.dropped += left
            self._log.warning(
                "gave up %d outcomes at shutdown; their tasks are recovered after the lease TTL",
                left,
            )

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    self._busy = False
                    self._cond.notify_all()
                    return
                n = min(len(self._queue), MAX_ITEMS)
                batch = [self._queue.popleft() for _ in range(n)]
                self._busy = True
            try:
                self._send(batch)
            except Exception as exc:  # never let the loop die; log the class only
                self._log.error("finish loop error: %s", type(exc).__name__)
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _send(self, batch: list[Outcome]) -> None:
        backoff = Backoff(0.05, 5.0)
        while not self._abandon.is_set():
            body = ('{"items":[' + ",".join(o.item for o in batch) + "]}").encode()
            try:
                answer = self._conn.request("POST", "/v1/worker/finish", body)
            except DocketError as err:
                delay = backoff.next()
                self._log.info("finish got no answer, retrying in %.2fs: code=%s", delay, err.code)
                self._abandon.wait(delay)
                continue
            self.calls += 1
            if 200 <= answer.status <= 299:
                try:
                    self._settle(batch, answer.json())
                except ValueError:
                    self._log.warning("finish answer is not JSON, retrying")
                    self._abandon.wait(backoff.next())
                    continue
                return
            err = error_of(answer)
            if err.status in (400, 413) and len(batch) > 1:
                # One item may be refused (too large, malformed): split, so
                # that the others still finish.
                half = len(batch) // 2
                self._send(batch[:half])
                self._send(batch[half:])
                return
            if err.status == 413 and batch[0].succeeded:
                # The result alone is over the server's body limit: fail the
                # task the way the server fails an over-large result.
                o = batch[0]
                o.item = encode(
                    {
                        "lease": o.task._lease,
                        "outcome": "failed",
                        "error": {
                            "code": "result_too_large",
                            "message": "the result is over the server's size limit",
                            "retryable": False,
                        },
                    }
                ).decode()
                o.succeeded = False
                continue
            if retryable(err):
                delay = backoff.next(err.retry_after or 0.0)
                self._log.info(
                    "finish refused, retrying in %.2fs: code=%s status=%s",
                    delay,
                    err.code,
                    err.status,
                )
                self._abandon.wait(delay)
                continue
            # Any other refusal will not change on a retry.
            self.dropped += len(batch)
            self._log.error(
                "finish refused, %d outcomes dropped (their tasks are recovered after the "
                "lease TTL): code=%s status=%s",
                len(batch),
                err.code,
                err.status,
            )
            for o in batch:
                self._leases.remove(o.task._lease)
            return
        # Abandoned at shutdown, after the flush timeout.
        self.dropped += len(batch)
        self._log.warning("gave up %d outcomes in flight at shutdown", len(batch))

    def _settle(self, batch: list[Outcome], answer: object) -> None:
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list):
            raise ValueError("finish answer has no items")
        status_of: dict[str, str] = {}
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("lease"), str):
                status_of[item["lease"]] = str(item.get("status"))
        for o in batch:
            task = o.task
            status = status_of.get(task._lease, "missing")
            self._leases.remove(task._lease)
            if status == "ok":
                self.ok += 1
            elif status == "lease_lost":
                self.lease_lost += 1
                self._log.info(
                    "outcome refused, the lease is no longer current: task_id=%s workflow=%s",
                    task.id,
                    task.workflow,
                )
            elif status == "conflict":
                self.conflict += 1
                self._log.info(
                    "outcome refused, the task already finished otherwise: task_id=%s workflow=%s",
                    task.id,
                    task.workflow,
                )
            else:
                self.dropped += 1
                self._log.warning(
                    "unexpected finish status: task_id=%s status=%s", task.id, status[:32]
                )
