"""The leases a worker holds: claimed, and not yet finished, released or
lost. The heartbeater renews exactly these."""

from __future__ import annotations

import threading

from .task import Task


class LeaseTable:
    """Tasks by lease token, safe for concurrent use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, Task] = {}

    def add(self, task: Task) -> None:
        with self._lock:
            self._tasks[task._lease] = task

    def remove(self, lease: str) -> Task | None:
        """Stops holding a lease (no more heartbeats for it)."""
        with self._lock:
            task = self._tasks.pop(lease, None)
        if task is not None:
            task._held = False
        return task

    def snapshot(self) -> list[Task]:
        with self._lock:
            return list(self._tasks.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._tasks)
