"""The worker's slots: a fixed number of daemon threads running handlers.

Daemon threads, so that a handler that never returns (it ignores its
cancellation) cannot keep the process alive after ``Worker.run`` returned.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

Job = Callable[[], None]


class SlotPool:
    """``size`` threads; ``free`` counts the slots not running a job.

    The claim loop reserves slots (``reserve``) before it claims, so it never
    asks the server for more tasks than it can start at once.
    """

    def __init__(self, size: int, *, name: str = "docket-slot") -> None:
        if size < 1:
            raise ValueError("docket: slots must be at least 1")
        self.size = size
        self._name = name
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._free = size
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i in range(self.size):
            t = threading.Thread(target=self._loop, name=f"{self._name}-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    @property
    def free(self) -> int:
        with self._cond:
            return self._free

    def wait_free(self, stopping: Callable[[], bool]) -> int:
        """Blocks until a slot is free or ``stopping()``; returns the free
        count (0 when stopping)."""
        with self._cond:
            while self._free == 0 and not stopping():
                self._cond.wait()
            return 0 if stopping() else self._free

    def submit(self, job: Job) -> None:
        """Runs job on a free slot. The caller made sure one is free."""
        with self._cond:
            self._free -= 1
        self._jobs.put(job)

    def wait_idle(self, deadline: Callable[[], float], now: Callable[[], float]) -> bool:
        """Blocks until every slot is free or ``now() >= deadline()``
        (re-read on each wake, so it can be moved); True if idle."""
        with self._cond:
            while self._free < self.size:
                left = deadline() - now()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def wake(self) -> None:
        """Wakes the waiters to re-check their conditions."""
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        """Lets the threads exit once their current job (if any) returns."""
        for _ in self._threads:
            self._jobs.put(None)

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            finally:
                with self._cond:
                    self._free += 1
                    self._cond.notify_all()
