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

from docket import Client, DocketError, Task, TaskFailure, Worker

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
        for short in (
            "echo", "refuse", "flaky", "cancel", "timeout", "evidence", "drain", "killed", "join",
            "retried", "paused", "keyed", "held", "refusing", "admitted",
        ):
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

    # --- retries and inputs -------------------------------------------------

    def test_retry_queues_a_failed_task_again_and_it_succeeds(self) -> None:
        runs: list[int] = []

        def fail_once(task: Task) -> Any:
            runs.append(task.attempt)
            if len(runs) == 1:
                raise TaskFailure("upstream_down", "down for now", retryable=False)
            return {"input": task.input}

        self.worker("retried", fail_once)
        tid = self.submit("retried", {"n": 7}, max_attempts=1)
        self.assertEqual(self.finished(tid).state, "failed")
        again = self.admin.retry(tid)
        self.assertEqual((again.id, again.state, again.error), (tid, "queued", None))
        t = self.finished(tid)
        self.assertEqual((t.state, t.result), ("succeeded", {"input": {"n": 7}}))
        self.assertEqual(len(runs), 2)
        moves = [(e.from_state, e.to_state, e.code) for e in self.admin.events(tid)]
        self.assertIn(("failed", "queued", "retried"), moves)

    def test_retry_of_a_succeeded_task_is_not_retryable(self) -> None:
        tid = self.admin.submit("demo.echo", {"n": 1}).id
        self.assertEqual(self.finished(tid).state, "succeeded")
        with self.assertRaises(DocketError) as cm:
            self.admin.retry(tid)
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_retryable", 409))
        self.assertEqual(self.admin.get(tid).state, "succeeded")

    def test_retry_on_a_full_tenant_is_a_capacity_error(self) -> None:
        # A tenant of its own with room for one task in flight; nothing
        # serves the workflow, so a submitted task stays queued (in flight).
        tenant = f"py-cap{self.run_id}"
        self.admin.request("PATCH", f"/v1/admin/tenants/{tenant}", {"max_in_flight": 1})
        made = self.admin.request(
            "POST", "/v1/admin/keys", {"tenant": tenant, "principal": "py-sdk", "role": "member"}
        )
        member = Client(URL, made["key"])
        self.addCleanup(member.close)
        first = member.submit(self.wf("held"), {"n": 1})
        self.assertEqual(member.cancel(first.id).state, "cancelled")
        second = member.submit(self.wf("held"), {"n": 2})
        with self.assertRaises(DocketError) as cm:
            member.retry(first.id)
        self.assertEqual((cm.exception.code, cm.exception.status), ("tenant_quota_exceeded", 429))
        self.assertIsNotNone(cm.exception.retry_after)
        self.assertEqual(member.get(first.id).state, "cancelled")
        # With room again, the retry is admitted.
        member.cancel(second.id)
        self.assertEqual(member.retry(first.id).state, "queued")
        member.cancel(first.id)

    def test_input_round_trips(self) -> None:
        value = {"text": "héllo ✓", "n": [1, 2.5, -3], "nested": {"ok": True, "none": None}}
        tid = self.submit("held", value)
        self.addCleanup(self.admin.cancel, tid)
        self.assertEqual(self.admin.input(tid), value)
        empty = self.submit("held", None)
        self.addCleanup(self.admin.cancel, empty)
        self.assertIsNone(self.admin.input(empty))
        with self.assertRaises(DocketError) as cm:
            self.admin.input("01a00000-0000-7000-8000-000000000000")
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))

    # --- flow control -------------------------------------------------------

    def test_a_paused_workflow_waits_until_resumed(self) -> None:
        name = self.wf("paused")
        self.addCleanup(self.admin.resume, workflow=name)
        self.assertIn({"workflow": name}, self.admin.pause(workflow=name))
        w = self.worker("paused", lambda task: {"attempt": task.attempt})
        tid = self.submit("paused", {})
        # The worker's claims pass it over while it is paused.
        t = self.admin.get(tid, wait=1.5)
        self.assertEqual((t.state, t.waiting_on), ("queued", "paused"))
        self.assertEqual(w.stats["claimed"], 0)
        self.assertNotIn({"workflow": name}, self.admin.resume(workflow=name))
        t = self.finished(tid)
        self.assertEqual((t.state, t.result), ("succeeded", {"attempt": 1}))

    def test_a_pause_that_refuses_submissions_refuses_them_until_resumed(self) -> None:
        # Nothing serves these workflows: what is admitted stays queued
        # (and is cancelled at the end).
        name = self.wf("refusing")
        self.addCleanup(self.admin.resume, workflow=name)
        self.assertIn({"workflow": name, "refuse_submissions": True},
                      self.admin.pause(workflow=name, refuse_submissions=True))
        listed = next(w for w in self.admin.request("GET", "/v1/admin/workflows")["workflows"] if w["name"] == name)
        self.assertEqual((listed["paused"], listed["refuse_submissions"]), (True, True))
        key = f"refusing-{self.run_id}"
        with self.assertRaises(DocketError) as cm:
            self.admin.submit(name, {"n": 1}, idempotency_key=key)
        self.assertEqual((cm.exception.code, cm.exception.status), ("submissions_paused", 409))
        # In a batch that item alone is refused.
        results = self.admin.submit_batch([
            {"workflow": name, "input": {"n": 2}, "idempotency_key": key + "-b"},
            {"workflow": self.wf("admitted"), "input": {"n": 3}, "idempotency_key": key + "-c"},
        ])
        self.assertEqual([r.status for r in results], [409, 201])
        self.assertEqual(results[0].error.code, "submissions_paused")
        self.addCleanup(self.admin.cancel, results[1].task.id)

        still = self.admin.resume(workflow=name)
        self.assertFalse([p for p in still if p.get("workflow") == name], still)
        # Nothing was written for the refused request: the same one is a
        # new task now.
        t = self.admin.submit(name, {"n": 1}, idempotency_key=key)
        self.addCleanup(self.admin.cancel, t.id)
        self.assertEqual((t.state, t.replayed, t.waiting_on), ("queued", False, None))

    def test_a_tenant_is_paused_and_rate_limited(self) -> None:
        tenant = f"py-flow{self.run_id}"
        got = self.admin.set_tenant_rate_limit(tenant, rate_per_second=50, burst=5)
        self.assertEqual((got.id, got.paused, got.rate_per_second, got.burst), (tenant, False, 50, 5))
        self.assertIn({"tenant": tenant}, self.admin.pause(tenant=tenant))
        listed = self._tenant(tenant)
        self.assertEqual((listed["paused"], listed["rate_per_second"], listed["burst"]), (True, 50, 5))
        self.assertIs(listed["refuse_submissions"], False)
        # A limit left out stays as it is.
        got = self.admin.set_tenant_rate_limit(tenant, burst=0)
        self.assertEqual((got.rate_per_second, got.paused, got.refuse_submissions), (50, True, False))
        # Paused again, refusing: the tenant's limits say so.
        self.assertIn({"tenant": tenant, "refuse_submissions": True},
                      self.admin.pause(tenant=tenant, refuse_submissions=True))
        self.assertTrue(self.admin.set_tenant_rate_limit(tenant, burst=0).refuse_submissions)
        self.assertNotIn({"tenant": tenant}, self.admin.resume(tenant=tenant))
        got = self.admin.set_tenant_rate_limit(tenant, rate_per_second=None)
        self.assertEqual((got.paused, got.rate_per_second, got.burst), (False, None, None))
        listed = self._tenant(tenant)
        self.assertEqual((listed["paused"], listed["rate_per_second"]), (False, None))
        with self.assertRaises(TypeError):
            self.admin.pause(tenant=tenant, workflow=self.wf("paused"))

    def _tenant(self, tenant: str) -> dict[str, Any]:
        listed = self.admin.request("GET", "/v1/admin/tenants")["tenants"]
        return next(t for t in listed if t["id"] == tenant)

    def test_workflow_limits_raise_the_concurrency_per_key(self) -> None:
        # Nothing serves the workflow: a task with a slot of its key is
        # ready (waiting on nothing but a worker), a second one waits.
        name = self.wf("keyed")
        first = self.submit("keyed", {"n": 1}, concurrency_key="k1")
        second = self.submit("keyed", {"n": 2}, concurrency_key="k1")
        for tid in (first, second):
            self.addCleanup(self.admin.cancel, tid)
        self.assertIsNone(self.admin.get(first).waiting_on)
        self.assertEqual(self.admin.get(second).waiting_on, "concurrency_key")
        got = self.admin.set_workflow_limits(name, concurrency_per_key=2, rate_per_second=100, burst=10)
        self.assertEqual(
            (got.name, got.paused, got.rate_per_second, got.burst, got.concurrency_per_key),
            (name, False, 100, 10, 2),
        )
        # The new slot went to the waiting task at once.
        self.assertIsNone(self.admin.get(second).waiting_on)
        got = self.admin.set_workflow_limits(name, rate_per_second=None, concurrency_per_key=None)
        self.assertEqual((got.rate_per_second, got.burst, got.concurrency_per_key), (None, None, 1))

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
