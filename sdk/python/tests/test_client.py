"""The Client against the fake server, and the helpers it rests on."""

from __future__ import annotations

import threading
import time
import tomllib
import unittest
from datetime import datetime, timezone
from pathlib import Path

import docket
from docket import Client, DocketError
from docket._backoff import Backoff
from docket._http import parse_retry_after, retryable
from docket._times import parse_time

from .fake_server import FakeDocket


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = FakeDocket().start()
        self.addCleanup(self.fake.close)
        self.client = Client(self.fake.url, self.fake.key)
        self.addCleanup(self.client.close)

    def test_submit_replays_the_same_key(self) -> None:
        t = self.client.submit("t.echo", {"a": 1}, idempotency_key="k-1", timeout_ms=5000)
        self.assertEqual(t.state, "queued")
        self.assertFalse(t.replayed)
        again = self.client.submit("t.echo", {"a": 1}, idempotency_key="k-1", timeout_ms=5000)
        self.assertEqual(again.id, t.id)
        self.assertTrue(again.replayed)
        with self.assertRaises(DocketError) as cm:
            self.client.submit("t.echo", {"a": 2}, idempotency_key="k-1")
        self.assertEqual((cm.exception.code, cm.exception.status), ("idempotency_conflict", 409))
        self.assertEqual(cm.exception.trace_id, "trace-1")
        body = self.fake.calls_to("/v1/tasks")[0].body
        self.assertEqual(body, {"workflow": "t.echo", "input": {"a": 1}, "timeout_ms": 5000})

    def test_submit_makes_a_key_when_none_is_given(self) -> None:
        a = self.client.submit("t.echo", 1)
        b = self.client.submit("t.echo", 1)
        self.assertNotEqual(a.id, b.id)

    def test_submit_options(self) -> None:
        when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
        self.client.submit("t.echo", None, pool="offline", run_at=when, depends_on=("t1",), priority=3)
        body = self.fake.calls_to("/v1/tasks")[0].body
        self.assertEqual(body["run_at"], "2030-01-02T03:04:05+00:00")
        self.assertEqual(body["depends_on"], ["t1"])
        self.assertEqual(body["pool"], "offline")
        with self.assertRaises(TypeError):
            self.client.submit("t.echo", None, colour="blue")

    def test_submit_batch(self) -> None:
        self.client.submit("t.echo", 1, idempotency_key="dup")
        results = self.client.submit_batch(
            [
                {"workflow": "t.echo", "input": 1, "idempotency_key": "b-1"},
                {"workflow": "t.echo", "input": 2, "idempotency_key": "dup"},
                {"workflow": "t.echo", "input": 3},
            ]
        )
        self.assertEqual([r.status for r in results], [201, 409, 201])
        self.assertIsNotNone(results[0].task)
        self.assertEqual(results[1].error.code, "idempotency_conflict")
        self.assertIsNone(results[1].task)
        with self.assertRaises(ValueError):
            self.client.submit_batch([])

    def test_get_wait_cancel_events_evidence(self) -> None:
        t = self.client.submit("t.echo", 1)
        got = self.client.get(t.id)
        self.assertEqual(got.id, t.id)
        self.assertIsInstance(got.deadline_at, datetime)
        # A wait returns when the task is terminal.
        path = f"/v1/tasks/{t.id}"

        def cancel_once_waiting() -> None:
            # The second GET of the task is the long poll.
            if self.fake.wait_for(lambda: len(self.fake.calls_to(path)) >= 2):
                self.client.cancel(t.id)

        threading.Thread(target=cancel_once_waiting, daemon=True).start()
        t0 = time.monotonic()
        done = self.client.get(t.id, wait=5)
        self.assertEqual(done.state, "cancelled")
        self.assertTrue(done.terminal)
        self.assertLess(time.monotonic() - t0, 3)
        self.assertEqual(self.fake.calls_to(f"/v1/tasks/{t.id}")[-1].status, 200)
        events = self.client.events(t.id)
        self.assertEqual([(e.from_state, e.to_state) for e in events], [("", "queued"), ("queued", "cancelled")])
        self.assertEqual(events[1].code, "cancelled")
        self.assertEqual(self.client.evidence(t.id), [])
        with self.assertRaises(DocketError) as cm:
            self.client.get("nope")
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))

    def test_retry_and_input(self) -> None:
        t = self.client.submit("t.echo", {"text": "héllo", "n": [1, 2.5]})
        self.assertEqual(self.client.input(t.id), {"text": "héllo", "n": [1, 2.5]})
        with self.assertRaises(DocketError) as cm:
            self.client.retry(t.id)
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_retryable", 409))
        self.client.cancel(t.id)
        again = self.client.retry(t.id)
        self.assertEqual((again.id, again.state), (t.id, "queued"))
        self.assertEqual(self.client.events(t.id)[-1].code, "retried")
        self.assertEqual(self.fake.calls_to(f"/v1/tasks/{t.id}/retry")[-1].body, None)
        # A full pool refuses the retry as it refuses a submission.
        self.fake.errors[f"/v1/tasks/{t.id}/retry"] = [(429, "queue_full", "2")]
        with self.assertRaises(DocketError) as cm:
            self.client.retry(t.id)
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.retry_after), ("queue_full", 429, 2.0))
        with self.assertRaises(DocketError) as cm:
            self.client.input("nope")
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))

    def test_pause_and_resume_name_exactly_one_target(self) -> None:
        self.assertEqual(self.client.pause(workflow="t.echo"), [{"workflow": "t.echo"}])
        self.assertEqual(self.client.pause(tenant="acme"), [{"workflow": "t.echo"}, {"tenant": "acme"}])
        self.assertEqual(self.client.resume(workflow="t.echo"), [{"tenant": "acme"}])
        self.assertEqual(self.fake.calls_to("/v1/admin/pause")[0].body, {"workflow": "t.echo"})
        self.assertEqual(self.fake.calls_to("/v1/admin/resume")[0].body, {"workflow": "t.echo"})
        for named in ({}, {"pool": "online", "tenant": "acme"}):
            with self.assertRaises(TypeError):
                self.client.pause(**named)
        self.assertEqual(len(self.fake.calls_to("/v1/admin/pause")), 2, "a refused target is not sent")

    def test_pause_that_refuses_submissions(self) -> None:
        # The flag is sent only when asked for, and the answer's items say
        # which pauses refuse submissions.
        self.assertEqual(self.client.pause(tenant="acme"), [{"tenant": "acme"}])
        got = self.client.pause(workflow="t.echo", refuse_submissions=True)
        self.assertEqual(got, [{"tenant": "acme"}, {"workflow": "t.echo", "refuse_submissions": True}])
        bodies = [c.body for c in self.fake.calls_to("/v1/admin/pause")]
        self.assertEqual(bodies, [{"tenant": "acme"}, {"workflow": "t.echo", "refuse_submissions": True}])
        self.assertEqual(self.fake.violations, [])
        with self.assertRaises(TypeError):
            self.client.pause(workflow="t.echo", refuse_submissions="yes")  # type: ignore[arg-type]
        self.assertEqual(len(self.fake.calls_to("/v1/admin/pause")), 2, "a refused flag is not sent")

        # A submission of it raises submissions_paused (409), once: the
        # client does not retry it, and the worker's rule would not either.
        with self.assertRaises(DocketError) as cm:
            self.client.submit("t.echo", {"n": 1}, idempotency_key="held-1")
        self.assertEqual((cm.exception.code, cm.exception.status), ("submissions_paused", 409))
        self.assertIsNone(cm.exception.retry_after)
        self.assertFalse(retryable(cm.exception))
        self.assertEqual(len(self.fake.calls_to("/v1/tasks")), 1)
        # In a batch only its items are refused.
        results = self.client.submit_batch(
            [
                {"workflow": "t.other", "input": 1, "idempotency_key": "b-ok"},
                {"workflow": "t.echo", "input": 2, "idempotency_key": "b-held"},
            ]
        )
        self.assertEqual([r.status for r in results], [201, 409])
        self.assertEqual((results[1].error.code, results[1].error.status, results[1].task), ("submissions_paused", 409, None))

        # The limits answers carry the flag too.
        self.assertTrue(self.client.set_workflow_limits("t.echo", rate_per_second=5).refuse_submissions)
        acme = self.client.set_tenant_rate_limit("acme", rate_per_second=5)
        self.assertEqual((acme.paused, acme.refuse_submissions), (True, False))

        # Pausing again without the flag keeps the pause and ends the
        # refusal; the resume ends both, and the same request is admitted.
        self.assertEqual(self.client.pause(workflow="t.echo"), [{"tenant": "acme"}, {"workflow": "t.echo"}])
        self.client.pause(workflow="t.echo", refuse_submissions=True)
        self.assertEqual(self.client.resume(workflow="t.echo"), [{"tenant": "acme"}])
        self.assertEqual(self.fake.calls_to("/v1/admin/resume")[0].body, {"workflow": "t.echo"})
        got_limits = self.client.set_workflow_limits("t.echo", rate_per_second=None)
        self.assertEqual((got_limits.paused, got_limits.refuse_submissions), (False, False))
        t = self.client.submit("t.echo", {"n": 1}, idempotency_key="held-1")
        self.assertEqual((t.state, t.replayed), ("queued", False))
        with self.assertRaises(TypeError):
            self.client.resume(workflow="t.echo", refuse_submissions=True)  # type: ignore[call-arg]

    def test_limits_send_only_the_fields_given(self) -> None:
        got = self.client.set_tenant_rate_limit("acme", rate_per_second=20, burst=2)
        self.assertEqual((got.id, got.paused, got.rate_per_second, got.burst), ("acme", False, 20, 2))
        self.assertEqual(got.raw["in_flight"], 0)
        got = self.client.set_tenant_rate_limit("acme", burst=None)
        self.assertEqual((got.rate_per_second, got.burst), (20, 0))
        got = self.client.set_tenant_rate_limit("acme", rate_per_second=None)
        self.assertEqual((got.rate_per_second, got.burst), (None, None))
        bodies = [c.body for c in self.fake.calls_to("/v1/admin/tenants/acme")]
        self.assertEqual(bodies, [{"rate_per_second": 20, "burst": 2}, {"burst": None}, {"rate_per_second": None}])

        got = self.client.set_workflow_limits("t.echo", concurrency_per_key=3)
        self.assertEqual(
            (got.name, got.rate_per_second, got.burst, got.concurrency_per_key), ("t.echo", None, None, 3)
        )
        got = self.client.set_workflow_limits("t.echo", rate_per_second=5, concurrency_per_key=None)
        self.assertEqual((got.rate_per_second, got.burst, got.concurrency_per_key), (5, 0, 1))
        bodies = [c.body for c in self.fake.calls_to("/v1/admin/workflows/t.echo")]
        self.assertEqual(bodies, [{"concurrency_per_key": 3}, {"rate_per_second": 5, "concurrency_per_key": None}])
        self.assertEqual(self.fake.violations, [])

    def test_wait_that_passes_returns_the_task_as_it_is(self) -> None:
        t = self.client.submit("t.echo", 1)
        t0 = time.monotonic()
        got = self.client.get(t.id, wait=0.3)
        self.assertEqual(got.state, "queued")
        self.assertGreaterEqual(time.monotonic() - t0, 0.25)
        self.assertEqual(self.fake.calls_to(f"/v1/tasks/{t.id}")[0].body, None)

    def test_overload_carries_retry_after(self) -> None:
        self.fake.errors["/v1/tasks"] = [(429, "queue_full", "3")]
        with self.assertRaises(DocketError) as cm:
            self.client.submit("t.echo", 1)
        self.assertEqual((cm.exception.code, cm.exception.status, cm.exception.retry_after), ("queue_full", 429, 3.0))

    def test_bad_key(self) -> None:
        with Client(self.fake.url, "wrong") as c:
            with self.assertRaises(DocketError) as cm:
                c.get("x")
        self.assertEqual(cm.exception.code, "unauthenticated")

    def test_no_server_is_a_connection_error(self) -> None:
        url = self.fake.url
        self.fake.close()
        with Client(url, "k", timeout=2) as c:
            with self.assertRaises(DocketError) as cm:
                c.get("x")
        self.assertEqual(cm.exception.code, docket.CONNECTION_ERROR)
        self.assertIsNone(cm.exception.status)

    def test_connections_are_pooled(self) -> None:
        for _ in range(20):
            self.client.submit("t.echo", 1)
        self.assertEqual(self.fake.connections, 1)

    def test_request_reaches_any_route(self) -> None:
        with self.assertRaises(DocketError) as cm:
            self.client.request("GET", "/v1/admin/nothing")
        self.assertEqual(cm.exception.status, 404)


class HelpersTest(unittest.TestCase):
    def test_parse_time_keeps_microseconds_of_go_timestamps(self) -> None:
        t = parse_time("2024-05-01T10:00:00.123456789Z")
        self.assertEqual(t, datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=timezone.utc))
        self.assertIsNone(parse_time(None))
        self.assertIsNone(parse_time("junk"))

    def test_retry_after(self) -> None:
        self.assertEqual(parse_retry_after("2"), 2.0)
        self.assertIsNone(parse_retry_after(None))
        self.assertIsNone(parse_retry_after("soon"))
        self.assertAlmostEqual(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0)

    def test_backoff_grows_to_its_cap_and_honours_retry_after(self) -> None:
        b = Backoff(0.1, 1.0)
        delays = [b.next() for _ in range(8)]
        self.assertTrue(0.05 <= delays[0] <= 0.1)
        self.assertTrue(all(0.5 <= d <= 1.0 for d in delays[5:]))
        self.assertEqual(b.next(at_least=5.0), 5.0)
        b.reset()
        self.assertLessEqual(b.next(), 0.1)

    def test_version_matches_pyproject(self) -> None:
        with open(Path(__file__).resolve().parent.parent / "pyproject.toml", "rb") as f:
            project = tomllib.load(f)["project"]
        self.assertEqual(project["version"], docket.__version__)
        self.assertEqual(docket.SDK, "python/" + docket.__version__)


if __name__ == "__main__":
    unittest.main()
