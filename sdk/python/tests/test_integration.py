"""Integration tests against a real server.

They run when DOCKET_URL and DOCKET_ADMIN_KEY are set (an admin key of
tenant ``demo``, as ``docket serve`` prints at first start), and skip
otherwise. DOCKET_LEASE_TTL_MS, when set, is the server's --lease-ttl (the
SIGKILL test waits for it); start the server with a short one, e.g. 2s:

    docket serve --lease-ttl 2s &
    DOCKET_URL=http://127.0.0.1:8080 DOCKET_ADMIN_KEY=dk_… DOCKET_LEASE_TTL_MS=2000 \\
        python3 -m unittest discover -s sdk/python/tests -t sdk/python -p 'test_integration.py' -v

Each run registers its own remote workflows (``py.it<run>.<name>``), makes
a worker key for tenant ``demo``, submits with the admin key, and runs
Workers in this process (and, for the SIGKILL test, in a child process).
"""

from __future__ import annotations

import os
import queue
import random
import signal
import string
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Callable

from docket import Client, Task, TaskFailure, Worker

URL = os.environ.get("DOCKET_URL", "")
ADMIN_KEY = os.environ.get("DOCKET_ADMIN_KEY", "")
LEASE_TTL = int(os.environ.get("DOCKET_LEASE_TTL_MS") or 30_000) / 1000.0
SDK_DIR = Path(__file__).resolve().parent.parent
SKIP = (
    "integration tests need a server: set DOCKET_URL and DOCKET_ADMIN_KEY "
    "(and DOCKET_LEASE_TTL_MS to the server's --lease-ttl)"
)
WAIT = 20.0  # the longest one step may take (a retry's backoff included)


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SDK_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


class _Lines:
    """The stdout lines of a child process, readable with a timeout."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._q: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        out = proc.stdout
        threading.Thread(target=lambda: [self._q.put(line) for line in out], daemon=True).start()

    def next(self, timeout: float) -> str:
        return self._q.get(timeout=timeout).strip()


@unittest.skipUnless(URL and ADMIN_KEY, SKIP)
class IntegrationTest(unittest.TestCase):
    admin: Client
    worker_key: str
    run_id: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.run_id = "".join(random.choices(string.ascii_lowercase, k=8))
        cls.admin = Client(URL, ADMIN_KEY)
        for short in ("echo", "refuse", "flaky", "cancel", "timeout", "evidence", "drain", "killed", "join"):
            cls.admin.request("PUT", f"/v1/admin/workflows/{cls.wf(short)}", {"pool": "online"})
        cls.admin.request("PUT", "/v1/admin/workflows/py.hello", {"pool": "online"})
        made = cls.admin.request(
            "POST", "/v1/admin/keys", {"tenant": "demo", "principal": "py-sdk", "role": "worker"}
        )
        cls.worker_key = made["key"]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.admin.close()

    @classmethod
    def wf(cls, short: str) -> str:
        return f"py.it{cls.run_id}.{short}"

    def worker(self, short: str, fn: Callable[[Task], Any], **kw: Any) -> Worker:
        kw.setdefault("slots", 4)
        kw.setdefault("wait_ms", 2000)
        kw.setdefault("shutdown_grace", 2.0)
        w = Worker(URL, self.worker_key, handlers={self.wf(short): fn}, **kw)

        def stop() -> None:
            w.stop(grace=0)
            self.assertTrue(w.join(WAIT), "worker did not stop")

        self.addCleanup(stop)
        w.start()
        return w

    @staticmethod
    def _reap(proc: subprocess.Popen[str]) -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def submit(self, short: str, input: Any = None, **options: Any) -> str:
        return self.admin.submit(self.wf(short), input, **options).id

    def finished(self, tid: str, timeout: float = WAIT) -> Any:
        t = self.admin.get(tid, wait=timeout)
        self.assertTrue(t.terminal, f"task {tid} is still {t.state}")
        return t

    # --- outcomes -----------------------------------------------------------

    def test_success_carries_the_result(self) -> None:
        seen: list[str] = []

        def echo(task: Task) -> Any:
            seen.append(task.traceparent)
            return {"echo": task.input, "attempt": task.attempt}

        self.worker("echo", echo)
        tid = self.submit("echo", {"text": "hi", "n": [1, 2]})
        t = self.finished(tid)
        self.assertEqual(t.state, "succeeded")
        self.assertEqual(t.result, {"echo": {"text": "hi", "n": [1, 2]}, "attempt": 1})
        # The handler saw the task span's traceparent, in the task's trace.
        self.assertEqual(len(seen), 1)
        self.assertRegex(seen[0], rf"^00-{t.trace_id}-[0-9a-f]{{16}}-01$")

    def test_failure_not_retryable_ends_failed_with_code_and_message(self) -> None:
        def refuse(task: Task) -> None:
            raise TaskFailure("bad_input", "the input needs a url", retryable=False)

        self.worker("refuse", refuse)
        tid = self.submit("refuse", {}, max_attempts=3)
        t = self.finished(tid)
        self.assertEqual(t.state, "failed")
        self.assertEqual(t.error.code, "bad_input")
        self.assertEqual(t.error.message, "the input needs a url")
        self.assertEqual(t.attempt, 1)

    def test_retryable_failure_is_retried(self) -> None:
        def flaky(task: Task) -> Any:
            if task.attempt == 1:
                raise TaskFailure("upstream_busy", "try again", retryable=True)
            return {"attempt": task.attempt}

        self.worker("flaky", flaky)
        tid = self.submit("flaky", {}, max_attempts=3)
        t = self.finished(tid, timeout=60)
        self.assertEqual(t.state, "succeeded")
        self.assertEqual(t.result, {"attempt": 2})
        self.assertEqual(t.attempt, 2)

    def test_dependency_results_fan_in(self) -> None:
        def join(task: Task) -> Any:
            deps = task.dependency_results()
            with self.assertRaises(KeyError):
                task.dependency_result("not-a-dependency")
            return {"total": sum(d["result"] for d in deps), "states": [d["state"] for d in deps]}

        self.worker("join", join)
        a = self.admin.submit("demo.echo", 2).id
        b = self.admin.submit("demo.echo", 40).id
        tid = self.submit("join", None, depends_on=[a, b])
        t = self.finished(tid)
        self.assertEqual(t.state, "succeeded")
        self.assertEqual(t.result, {"total": 42, "states": ["succeeded", "succeeded"]})

    def test_evidence_is_stored(self) -> None:
        def record(task: Task) -> str:
            task.evidence("check", {"rule": "r1", "passed": True})
            task.evidence("check", {"rule": "r2", "passed": False})
            return "ok"

        self.worker("evidence", record)
        tid = self.submit("evidence", {})
        self.assertEqual(self.finished(tid).state, "succeeded")
        items = self.admin.evidence(tid)
        self.assertEqual([(e.kind, e.body) for e in items], [
            ("check", {"rule": "r1", "passed": True}),
            ("check", {"rule": "r2", "passed": False}),
        ])
        self.assertEqual({e.attempt for e in items}, {1})

    # --- cancellation -------------------------------------------------------

    def test_cancel_reaches_the_running_handler(self) -> None:
        started = threading.Event()
        seen: queue.Queue[Any] = queue.Queue()

        def hold(task: Task) -> str:
            started.set()
            seen.put((task.cancelled.wait(30), task.cancel_reason, time.monotonic()))
            return "late"

        self.worker("cancel", hold)
        tid = self.submit("cancel", {})
        self.assertTrue(started.wait(WAIT), "the handler did not start")
        t0 = time.monotonic()
        self.assertEqual(self.admin.cancel(tid).state, "cancelled")
        cancelled, reason, at = seen.get(timeout=WAIT)
        self.assertTrue(cancelled)
        self.assertEqual(reason, "cancelled")
        self.assertLess(at - t0, 2.5, "the cancel took too long to reach the handler")
        t = self.finished(tid)
        self.assertEqual(t.state, "cancelled")
        self.assertIsNone(t.result)

    def test_short_timeout_ends_timed_out_and_cancels_the_handler(self) -> None:
        started = threading.Event()
        seen: queue.Queue[Any] = queue.Queue()

        def hold(task: Task) -> str:
            started.set()
            seen.put((task.cancelled.wait(30), task.cancel_reason))
            return "late"

        self.worker("timeout", hold)
        tid = self.submit("timeout", {}, timeout_ms=1500)
        self.assertTrue(started.wait(WAIT))
        self.assertEqual(seen.get(timeout=WAIT), (True, "timed_out"))
        t = self.finished(tid)
        self.assertEqual(t.state, "timed_out")
        self.assertIsNone(t.result)

    # --- shutdown and crashes -----------------------------------------------

    def test_stop_releases_a_running_task_without_charging_an_attempt(self) -> None:
        started = threading.Event()
        seen: queue.Queue[Any] = queue.Queue()

        def hold(task: Task) -> str:
            started.set()
            seen.put((task.cancelled.wait(30), task.cancel_reason, task.attempt))
            return "late"

        first = self.worker("drain", hold, shutdown_grace=0.5)
        submitted = self.admin.submit(self.wf("drain"), {}, max_attempts=3)
        tid = submitted.id
        self.assertTrue(started.wait(WAIT))
        first.stop()
        self.assertTrue(first.join(WAIT))
        cancelled, reason, first_attempt = seen.get(timeout=WAIT)
        self.assertEqual((cancelled, reason), (True, "shutdown"))
        self.assertEqual(first.stats["released"], 1)
        events = self.admin.events(tid)
        self.assertIn(("running", "queued", "shutdown"), [(e.from_state, e.to_state, e.code) for e in events])
        # Not charged: queued again as it was before the claim.
        after = self.admin.get(tid)
        self.assertEqual(after.state, "queued")
        self.assertEqual(after.attempt, submitted.attempt, "the release charged an attempt")
        # Another worker finishes it, on the same attempt as the first.
        self.worker("drain", lambda task: {"attempt": task.attempt})
        t = self.finished(tid)
        self.assertEqual((t.state, t.result), ("succeeded", {"attempt": first_attempt}))

    def test_killed_worker_task_is_recovered_and_finished_by_another(self) -> None:
        proc = subprocess.Popen(
            [sys.executable, str(SDK_DIR / "tests" / "kill_worker_script.py")],
            env=_env(
                DOCKET_URL=URL, DOCKET_WORKER_KEY=self.worker_key, DOCKET_WORKFLOW=self.wf("killed")
            ),
            stdout=subprocess.PIPE,
            text=True,
        )
        self.addCleanup(self._reap, proc)
        lines = _Lines(proc)
        tid = self.submit("killed", {}, max_attempts=3)
        self.assertEqual(lines.next(WAIT), f"started {tid}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(WAIT)
        # The server recovers the lease after its TTL (and its recovery
        # period); then this worker claims it.
        self.worker("killed", lambda task: {"by": "survivor", "attempt": task.attempt})
        t = self.finished(tid, timeout=LEASE_TTL * 3 + 30)
        self.assertEqual(t.state, "succeeded")
        self.assertEqual(t.result, {"by": "survivor", "attempt": 2})
        moves = [(e.from_state, e.to_state) for e in self.admin.events(tid)]
        self.assertGreaterEqual(moves.count(("queued", "running")), 2)
        self.assertIn(("running", "queued"), moves)

    # --- the README's example -----------------------------------------------

    def test_readme_example_runs(self) -> None:
        proc = subprocess.Popen(
            [sys.executable, str(SDK_DIR / "examples" / "quickstart.py")],
            env=_env(DOCKET_URL=URL, DOCKET_WORKER_KEY=self.worker_key),
        )
        self.addCleanup(self._reap, proc)
        tid = self.admin.submit("py.hello", {"name": "Ada"}).id
        t = self.finished(tid)
        self.assertEqual((t.state, t.result), ("succeeded", {"greeting": "hello, Ada"}))
        self.assertEqual([(e.kind, e.body) for e in self.admin.evidence(tid)], [("greeting", {"name": "Ada"})])
        proc.send_signal(signal.SIGTERM)  # graceful shutdown, exit 0
        self.assertEqual(proc.wait(WAIT), 0)


if __name__ == "__main__":
    unittest.main()
