"""The Worker against the fake server (tests/fake_server.py)."""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time
import unittest
from datetime import datetime
from typing import Any

import docket
from docket import DocketError, LeaseLost, Task, TaskFailure, Worker

from .fake_server import FakeDocket

WAIT = 5.0  # the longest any single wait in these tests may take


class _Capture(logging.Handler):
    """Every record of the ``docket`` loggers, formatted with its args."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


class WorkerTestCase(unittest.TestCase):
    heartbeat_ms = 100

    def setUp(self) -> None:
        self.fake = FakeDocket(heartbeat_ms=self.heartbeat_ms).start()
        self.addCleanup(self.fake.close)
        self.logs = _Capture()
        logger = logging.getLogger("docket")
        logger.addHandler(self.logs)
        old_level = logger.level
        logger.setLevel(logging.DEBUG)
        self.addCleanup(logger.setLevel, old_level)
        self.addCleanup(logger.removeHandler, self.logs)

    def worker(self, **kw: Any) -> Worker:
        kw.setdefault("wait_ms", 1000)
        kw.setdefault("shutdown_grace", 2.0)
        kw.setdefault("worker_id", "test-worker")
        w = Worker(self.fake.url, kw.pop("key", self.fake.key), **kw)
        self.addCleanup(self._stop, w)
        return w

    def _stop(self, w: Worker) -> None:
        w.stop(grace=0)
        self.assertTrue(w.join(WAIT), "worker did not stop")

    def state(self, tid: str) -> str:
        with self.fake.cond:
            return self.fake.tasks[tid].state

    def wait_state(self, tid: str, *states: str) -> None:
        ok = self.fake.wait_for(lambda: self.fake.tasks[tid].state in states, WAIT)
        self.assertTrue(ok, f"task {tid} is {self.state(tid)}, want one of {states}")

    def tearDown(self) -> None:
        self.assertEqual(self.fake.violations, [], "the SDK sent fields the contract does not know")


class SuccessTest(WorkerTestCase):
    def test_result_and_binding(self) -> None:
        seen: dict[str, Any] = {}

        w = self.worker(slots=2)

        @w.workflow("t.echo")
        def echo(task: Task) -> Any:
            seen.update(
                id=task.id,
                tenant=task.tenant,
                attempt=task.attempt,
                max_attempts=task.max_attempts,
                deadline_at=task.deadline_at,
                trace_id=task.trace_id,
                config_version=task.config_version,
                workflow=task.workflow,
            )
            return {"echo": task.input}

        tid = self.fake.add_task("t.echo", {"n": 7, "s": "é"}, attempt=2, max_attempts=4)
        w.start()
        self.wait_state(tid, "succeeded")
        self.assertEqual(self.fake.tasks[tid].result, {"echo": {"n": 7, "s": "é"}})
        self.assertEqual(seen["id"], tid)
        self.assertEqual(seen["tenant"], "demo")
        self.assertEqual((seen["attempt"], seen["max_attempts"]), (2, 4))
        self.assertEqual(seen["workflow"], "t.echo")
        self.assertEqual(seen["config_version"], "demo-1")
        self.assertEqual(seen["trace_id"], "0af7651916cd43dd8448eb211c80319c")
        self.assertIsInstance(seen["deadline_at"], datetime)
        self.assertIsNotNone(seen["deadline_at"].tzinfo)
        claim = self.fake.calls_to("/v1/worker/claim")[0].body
        self.assertEqual(claim["workflows"], ["t.echo"])
        self.assertEqual(claim["worker_id"], "test-worker")
        self.assertEqual(claim["slots"], 2)
        self.assertEqual(claim["sdk"], docket.SDK)
        self.assertEqual(claim["wait_ms"], 1000)
        self.assertNotIn("pool", claim)

    def test_pool_is_sent_when_set(self) -> None:
        w = self.worker(pool="offline", handlers={"t.echo": lambda task: None})
        w.start()
        self.assertTrue(self.fake.wait_for(lambda: self.fake.calls_to("/v1/worker/claim"), WAIT))
        self.assertEqual(self.fake.calls_to("/v1/worker/claim")[0].body["pool"], "offline")

    def test_connections_are_kept_alive(self) -> None:
        w = self.worker(slots=4)
        w.handle("t.noop", lambda task: None)
        ids = [self.fake.add_task("t.noop") for _ in range(200)]
        w.start()
        for tid in ids:
            self.wait_state(tid, "succeeded")
        # One connection each for the claim loop, the heartbeater and the
        # finisher: not one per call.
        self.assertLessEqual(self.fake.connections, 3)
        self.assertGreater(len(self.fake.calls), 10)

    def test_finish_batches_outcomes(self) -> None:
        w = self.worker(slots=50)
        w.handle("t.noop", lambda task: None)
        ids = [self.fake.add_task("t.noop") for _ in range(500)]
        w.start()
        for tid in ids:
            self.wait_state(tid, "succeeded")
        finishes = self.fake.calls_to("/v1/worker/finish")
        self.assertLess(len(finishes), 250, "outcomes are not batched")
        self.assertLessEqual(max(len(c.body["items"]) for c in finishes), 1000)


class SlotsTest(WorkerTestCase):
    def test_claims_only_free_slots(self) -> None:
        started: queue.Queue[str] = queue.Queue()
        gates: dict[str, threading.Event] = {}
        lock = threading.Lock()
        running = [0, 0]  # now, most

        def block(task: Task) -> None:
            with lock:
                running[0] += 1
                running[1] = max(running[1], running[0])
            started.put(task.id)
            gates[task.id].wait(WAIT)
            with lock:
                running[0] -= 1

        for _ in range(5):
            gates[self.fake.add_task("t.block")] = threading.Event()
        w = self.worker(slots=2)
        w.handle("t.block", block)
        w.start()
        first = started.get(timeout=WAIT)
        second = started.get(timeout=WAIT)
        # Time passes (three heartbeats) with both slots busy: no claim.
        self.assertTrue(
            self.fake.wait_for(lambda: len(self.fake.calls_to("/v1/worker/heartbeat")) >= 3, WAIT)
        )
        claims = self.fake.calls_to("/v1/worker/claim")
        self.assertEqual([c.body["max"] for c in claims], [2])
        # One slot frees: the next claim asks for one task.
        gates[first].set()
        third = started.get(timeout=WAIT)
        claims = self.fake.calls_to("/v1/worker/claim")
        self.assertEqual(claims[1].body["max"], 1)
        for g in gates.values():
            g.set()
        for tid in gates:
            self.wait_state(tid, "succeeded")
        self.assertEqual(running[1], 2)
        self.assertTrue(all(c.body["max"] <= 2 for c in self.fake.calls_to("/v1/worker/claim")))
        self.assertNotIn(third, (first, second))


class HeartbeatTest(WorkerTestCase):
    heartbeat_ms = 200

    def test_one_call_per_interval_for_all_leases(self) -> None:
        release = threading.Event()
        self.addCleanup(release.set)
        ids = [self.fake.add_task("t.block") for _ in range(5)]
        w = self.worker(slots=5)
        w.handle("t.block", lambda task: release.wait(WAIT))
        w.start()
        self.assertTrue(
            self.fake.wait_for(lambda: len(self.fake.calls_to("/v1/worker/heartbeat")) >= 5, WAIT)
        )
        beats = self.fake.calls_to("/v1/worker/heartbeat")[:5]
        claim = self.fake.calls_to("/v1/worker/claim")[0]
        leases = {f"dkl1.{tid}.1.mac" for tid in ids}
        for b in beats:
            self.assertEqual(set(b.body["leases"]), leases, "every call renews every lease")
            self.assertEqual(b.body["worker_id"], "test-worker")
        # The first at once after the claim, then one per interval.
        self.assertLess(beats[0].at - claim.at, 0.1)
        gaps = [b.at - a.at for a, b in zip(beats, beats[1:])]
        self.assertGreaterEqual(min(gaps), 0.2 * 0.8, f"heartbeats flood: {gaps}")
        self.assertLess(max(gaps), 0.2 * 3, f"heartbeats late: {gaps}")
        release.set()
        for tid in ids:
            self.wait_state(tid, "succeeded")

    def test_lease_expires_locally_without_heartbeats(self) -> None:
        self.fake.lease_ttl_ms = 400
        self.fake.errors["/v1/worker/heartbeat"] = [(503, "store_unavailable", None)] * 1000
        reasons: queue.Queue[Any] = queue.Queue()

        def wait(task: Task) -> str:
            reasons.put((task.cancelled.wait(WAIT), task.cancel_reason))
            return "late"

        tid = self.fake.add_task("t.wait")
        w = self.worker()
        w.handle("t.wait", wait)
        w.start()
        # The handler itself gives up after WAIT: wait longer than it, so a
        # slow machine fails on the assertion, not on an empty queue.
        self.assertEqual(reasons.get(timeout=2 * WAIT), (True, "lease_lost"))
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertEqual(self.fake.finish_items_for(tid), [])


class CancellationTest(WorkerTestCase):
    def run_cancelled(self, status: str) -> tuple[str, Task, Worker]:
        got: queue.Queue[Task] = queue.Queue()
        returned = threading.Event()

        def wait(task: Task) -> dict[str, bool]:
            task.cancelled.wait(WAIT)
            got.put(task)
            returned.set()
            return {"late": True}

        tid = self.fake.add_task("t.wait")
        self.fake.heartbeat_status[tid] = status
        w = self.worker()
        w.handle("t.wait", wait)
        w.start()
        # The handler returns after WAIT at the latest: wait longer than it,
        # so that a slow machine fails on the caller's assertions (was the
        # task cancelled, and why), not on an empty queue.
        task = got.get(timeout=2 * WAIT)
        self.assertTrue(returned.wait(WAIT))
        w.stop()
        self.assertTrue(w.join(WAIT))
        return tid, task, w

    def test_server_statuses_cancel_the_handler_and_drop_its_result(self) -> None:
        for status in ("cancelled", "timed_out", "lease_lost"):
            with self.subTest(status=status):
                tid, task, w = self.run_cancelled(status)
                self.assertTrue(task.cancelled.is_set())
                self.assertEqual(task.cancel_reason, status)
                self.assertEqual(self.fake.finish_items_for(tid), [], "a late result was sent")
                self.assertNotIn(tid, self.fake.released)
                # The lease is not heartbeated again after the answer.
                lease = f"dkl1.{tid}.1.mac"
                beats = [c for c in self.fake.calls_to("/v1/worker/heartbeat") if lease in c.body["leases"]]
                self.assertEqual(len(beats), 1)
                self.assertEqual(w.stats["dropped"], 1)
                with self.assertRaises(LeaseLost):
                    task.evidence("rule", {"ok": True})
                with self.assertRaises(docket.TaskCancelled):
                    task.raise_if_cancelled()

    def test_raise_if_cancelled_drops_the_outcome(self) -> None:
        stopped: queue.Queue[str] = queue.Queue()

        def loop(task: Task) -> str:
            try:
                while True:
                    task.raise_if_cancelled()
                    task.cancelled.wait(WAIT)
            except docket.TaskCancelled as exc:
                stopped.put(exc.reason)
                raise

        tid = self.fake.add_task("t.loop")
        self.fake.heartbeat_status[tid] = "cancelled"
        w = self.worker()
        w.handle("t.loop", loop)
        w.start()
        self.assertEqual(stopped.get(timeout=WAIT), "cancelled")
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertEqual(self.fake.finish_items_for(tid), [], "a cancelled handler's exception was sent")
        self.assertFalse(any("TaskCancelled" in line for line in self.logs.lines if "raised" in line))

    def test_deadline_cancels_locally(self) -> None:
        got: queue.Queue[Any] = queue.Queue()

        def wait(task: Task) -> str:
            got.put((task.cancelled.wait(WAIT), task.cancel_reason, task.time_left()))
            return "late"

        tid = self.fake.add_task("t.wait", deadline_in=0.3)
        w = self.worker()
        w.handle("t.wait", wait)
        w.start()
        cancelled, reason, left = got.get(timeout=WAIT)
        self.assertTrue(cancelled)
        self.assertEqual(reason, "timed_out")
        self.assertLessEqual(left, 0.05)
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertEqual(self.fake.finish_items_for(tid), [])

    def test_evidence_refused_means_lease_lost(self) -> None:
        got: queue.Queue[Any] = queue.Queue()

        def write(task: Task) -> str:
            try:
                task.evidence("rule", {"rule": "r1"})
            except LeaseLost as exc:
                got.put((exc, task.cancel_reason))
            return "late"

        tid = self.fake.add_task("t.ev")
        self.fake.evidence_lease_lost.add(tid)
        w = self.worker()
        w.handle("t.ev", write)
        w.start()
        exc, reason = got.get(timeout=WAIT)
        self.assertIsInstance(exc, LeaseLost)
        self.assertEqual(exc.code, "lease_lost")
        self.assertEqual(reason, "lease_lost")
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertEqual(self.fake.finish_items_for(tid), [])


class EvidenceTest(WorkerTestCase):
    def test_evidence_is_written_under_the_lease(self) -> None:
        def write(task: Task) -> str:
            task.evidence("rule", {"rule": "r1", "passed": True})
            task.evidence("rule", {"rule": "r2", "passed": False})
            return "done"

        tid = self.fake.add_task("t.ev")
        w = self.worker()
        w.handle("t.ev", write)
        w.start()
        self.wait_state(tid, "succeeded")
        self.assertEqual(
            [e["body"] for e in self.fake.tasks[tid].evidence],
            [{"rule": "r1", "passed": True}, {"rule": "r2", "passed": False}],
        )
        calls = self.fake.calls_to("/v1/worker/evidence")
        self.assertEqual(calls[0].body["items"][0]["lease"], f"dkl1.{tid}.1.mac")


    def test_evidence_is_retried_when_the_server_is_busy(self) -> None:
        self.fake.errors["/v1/worker/evidence"] = [(503, "store_unavailable", "0")]
        tid = self.fake.add_task("t.ev")
        w = self.worker()
        w.handle("t.ev", lambda task: task.evidence("rule", {"n": 1}))
        w.start()
        self.wait_state(tid, "succeeded")
        self.assertEqual([e["body"] for e in self.fake.tasks[tid].evidence], [{"n": 1}])
        self.assertEqual([c.status for c in self.fake.calls_to("/v1/worker/evidence")], [503, 200])


class FailureTest(WorkerTestCase):
    CANARY = "SECRET-CANARY-7f3a"

    def test_task_failure_and_other_exceptions(self) -> None:
        w = self.worker(slots=3)

        @w.workflow("t.refuse")
        def refuse(task: Task) -> None:
            raise TaskFailure("bad_image", "not a PNG " + self.CANARY, retryable=False)

        @w.workflow("t.retry")
        def retry(task: Task) -> None:
            raise TaskFailure("upstream_busy", "try later", retryable=True)

        @w.workflow("t.crash")
        def crash(task: Task) -> None:
            raise ValueError("bad input " + task.input["secret"])

        @w.workflow("t.unjson")
        def unjson(task: Task) -> Any:
            return {"x": object()}

        a = self.fake.add_task("t.refuse", {"secret": self.CANARY})
        b = self.fake.add_task("t.retry", {"secret": self.CANARY})
        c = self.fake.add_task("t.crash", {"secret": self.CANARY})
        d = self.fake.add_task("t.unjson", {"secret": self.CANARY})
        w.start()
        for tid in (a, b, c, d):
            self.wait_state(tid, "failed")
        error = lambda tid: self.fake.tasks[tid].outcome["error"]  # noqa: E731
        self.assertEqual(
            error(a), {"code": "bad_image", "message": "not a PNG " + self.CANARY, "retryable": False}
        )
        self.assertEqual(error(b), {"code": "upstream_busy", "message": "try later", "retryable": True})
        self.assertEqual(error(c), {"code": "workflow_error", "message": "ValueError", "retryable": True})
        self.assertEqual(error(d)["code"], "workflow_error")
        self.assertFalse(error(d)["retryable"])
        self.assertNotIn(self.CANARY, error(c)["message"])
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertTrue(any("ValueError" in line for line in self.logs.lines))
        leaked = [line for line in self.logs.lines if self.CANARY in line or "PNG" in line]
        self.assertEqual(leaked, [], "a log line carries an input or a failure message")

    def test_long_message_is_cut_to_1024_bytes(self) -> None:
        w = self.worker()
        w.handle("t.long", lambda task: (_ for _ in ()).throw(TaskFailure("too_long", "é" * 1000)))
        tid = self.fake.add_task("t.long")
        w.start()
        self.wait_state(tid, "failed")
        message = self.fake.tasks[tid].outcome["error"]["message"]
        self.assertLessEqual(len(message.encode()), 1024)
        self.assertTrue(message.startswith("éé"))


class FinishRetryTest(WorkerTestCase):
    def test_dropped_answer_is_retried_and_ok(self) -> None:
        self.fake.drop_finish_answers = 1
        tid = self.fake.add_task("t.echo", {"v": 1})
        w = self.worker()
        w.handle("t.echo", lambda task: task.input)
        w.start()
        self.wait_state(tid, "succeeded")
        # The same item went twice: the first committed without an answer,
        # the second was answered ok.
        self.assertTrue(self.fake.wait_for(lambda: len(self.fake.finish_items_for(tid)) == 2, WAIT))
        items = self.fake.finish_items_for(tid)
        self.assertEqual(items[0], items[1])
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertEqual(w.stats["finished_ok"], 1)
        self.assertEqual(w.stats["finish_conflict"], 0)
        statuses = [c.status for c in self.fake.calls_to("/v1/worker/finish")]
        self.assertEqual(statuses, [-1, 200])

    def test_overloaded_finish_is_retried(self) -> None:
        self.fake.finish_errors = [(503, "store_unavailable", "0"), (429, "too_many_requests", "0")]
        tid = self.fake.add_task("t.echo", 5)
        w = self.worker()
        w.handle("t.echo", lambda task: task.input)
        w.start()
        self.wait_state(tid, "succeeded")
        self.assertEqual(self.fake.tasks[tid].result, 5)
        self.assertEqual(len(self.fake.calls_to("/v1/worker/finish")), 3)

    def test_result_over_the_body_limit_fails_the_task(self) -> None:
        self.fake.finish_errors = [(413, "payload_too_large", None)]
        tid = self.fake.add_task("t.big")
        w = self.worker()
        w.handle("t.big", lambda task: "x" * 1000)
        w.start()
        self.wait_state(tid, "failed")
        self.assertEqual(self.fake.tasks[tid].outcome["error"]["code"], "result_too_large")
        self.assertFalse(self.fake.tasks[tid].outcome["error"]["retryable"])

    def test_conflict_and_lease_lost_are_final(self) -> None:
        # The task is cancelled between the handler's end and the finish:
        # lease_lost, logged, not retried.
        tid = self.fake.add_task("t.echo")

        def run(task: Task) -> int:
            with self.fake.cond:
                t = self.fake.tasks[tid]
                t.epoch += 1
                t.state = "cancelled"
            return 1

        w = self.worker()
        w.handle("t.echo", run)
        w.start()
        self.assertTrue(self.fake.wait_for(lambda: self.fake.calls_to("/v1/worker/finish"), WAIT))
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertEqual(len(self.fake.calls_to("/v1/worker/finish")), 1)
        self.assertEqual(w.stats["finish_lease_lost"], 1)


class ShutdownTest(WorkerTestCase):
    def test_stop_drains_cancels_releases_and_flushes(self) -> None:
        stop_called = threading.Event()
        started: queue.Queue[str] = queue.Queue()
        stubborn: queue.Queue[Any] = queue.Queue()

        def quick(task: Task) -> str:
            started.put(task.id)
            stop_called.wait(WAIT)
            return "drained"

        def slow(task: Task) -> str:
            started.put(task.id)
            stubborn.put((task.cancelled.wait(WAIT), task.cancel_reason))
            return "too late"

        a = self.fake.add_task("t.quick")
        b = self.fake.add_task("t.slow")
        # The drained task's first finish is refused: the flush retries it.
        self.fake.finish_errors = [(503, "store_unavailable", "0")]
        w = self.worker(slots=3, shutdown_grace=0.6)
        w.handle("t.quick", quick)
        w.handle("t.slow", slow)
        w.start()
        self.assertEqual({started.get(timeout=WAIT), started.get(timeout=WAIT)}, {a, b})
        t0 = time.monotonic()
        w.stop()
        stop_called.set()
        self.assertTrue(w.join(WAIT))
        elapsed = time.monotonic() - t0
        # The slow task got the grace, then was cancelled and released.
        self.assertEqual(stubborn.get(timeout=WAIT), (True, "shutdown"))
        self.assertGreaterEqual(elapsed, 0.55)
        self.assertEqual(self.fake.released, [b])
        self.assertEqual(self.state(b), "queued")
        self.assertEqual(self.fake.finish_items_for(b), [])
        # The drained task's outcome was flushed before join returned.
        self.assertEqual(self.state(a), "succeeded")
        self.assertEqual(self.fake.tasks[a].result, "drained")
        # No claim after stop; heartbeats went on during the grace.
        self.assertEqual([c for c in self.fake.calls_to("/v1/worker/claim") if c.at > t0], [])
        lease_b = f"dkl1.{b}.1.mac"
        late_beats = [
            c for c in self.fake.calls_to("/v1/worker/heartbeat") if c.at > t0 and lease_b in c.body["leases"]
        ]
        self.assertGreaterEqual(len(late_beats), 2)
        self.assertEqual(w.stats["released"], 1)

    def test_stop_from_a_handler(self) -> None:
        w = self.worker()

        def last(task: Task) -> str:
            w.stop()
            return "bye"

        w.handle("t.last", last)
        tid = self.fake.add_task("t.last")
        w.start()
        self.assertTrue(w.join(WAIT))
        self.assertEqual((self.state(tid), self.fake.tasks[tid].result), ("succeeded", "bye"))

    def test_stop_ends_an_idle_long_poll_at_once(self) -> None:
        w = self.worker(wait_ms=30_000)
        w.handle("t.none", lambda task: None)
        w.start()
        self.assertTrue(self.fake.wait_for(lambda: self.fake.calls_to("/v1/worker/claim"), WAIT))
        t0 = time.monotonic()
        w.stop()
        self.assertTrue(w.join(WAIT))
        self.assertLess(time.monotonic() - t0, 1.0)

    def test_context_manager_runs_in_the_background(self) -> None:
        w = self.worker()

        @w.workflow("t.echo")
        def echo(task: Task) -> Any:
            return task.input

        tid = self.fake.add_task("t.echo", "hi")
        with w:
            self.wait_state(tid, "succeeded")
        self.assertTrue(w.join(0))
        with self.assertRaises(RuntimeError):
            w.start()

    def test_signal_stops_run(self) -> None:
        w = self.worker(wait_ms=30_000)
        w.handle("t.none", lambda task: None)
        before = signal.getsignal(signal.SIGTERM)

        def kill_when_polling() -> None:
            if self.fake.wait_for(lambda: self.fake.calls_to("/v1/worker/claim"), WAIT):
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=kill_when_polling, daemon=True).start()
        t0 = time.monotonic()
        w.run(install_signal_handlers=True)  # returns on SIGTERM
        self.assertLess(time.monotonic() - t0, WAIT)
        self.assertIs(signal.getsignal(signal.SIGTERM), before)


class ClaimErrorsTest(WorkerTestCase):
    def test_overload_waits_for_retry_after(self) -> None:
        self.fake.claim_errors = [(429, "too_many_requests", "1")]
        tid = self.fake.add_task("t.echo", 1)
        w = self.worker()
        w.handle("t.echo", lambda task: task.input)
        w.start()
        self.wait_state(tid, "succeeded")
        claims = self.fake.calls_to("/v1/worker/claim")
        self.assertGreaterEqual(claims[1].at - claims[0].at, 0.95)

    def test_refused_key_ends_run(self) -> None:
        w = self.worker(key="wrong")
        w.handle("t.echo", lambda task: None)
        with self.assertRaises(DocketError) as cm:
            w.run()
        self.assertEqual(cm.exception.code, "unauthenticated")
        self.assertEqual(cm.exception.status, 401)

    def test_registration_rules(self) -> None:
        w = self.worker()
        with self.assertRaises(RuntimeError):
            w.run()  # no handler
        w2 = self.worker()
        w2.handle("t.a", lambda task: None)
        with self.assertRaises(ValueError):
            w2.handle("t.a", lambda task: None)
        with self.assertRaises(ValueError):
            Worker(self.fake.url, "k", slots=0)
        with self.assertRaises(ValueError):
            Worker(self.fake.url, "k", wait_ms=70_000)


if __name__ == "__main__":
    unittest.main()
