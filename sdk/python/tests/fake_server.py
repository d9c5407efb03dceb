"""An in-memory Docket server for unit tests: the worker protocol
(claim, heartbeat, finish, evidence, release) and the task API, enough to
check the SDK's behaviour, with knobs to inject faults.

It is strict like the real server: unknown fields are refused with 400
``invalid_request`` (and recorded in ``violations``), leases are fenced by
epoch, finishing is idempotent. Every call is recorded in ``calls``;
``wait_for(predicate)`` waits on a condition notified after each call, so
tests synchronise on what the server saw, not on sleeps.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

FIELDS = {
    "/v1/worker/claim": {"workflows", "pool", "max", "wait_ms", "worker_id", "slots", "sdk"},
    "/v1/worker/heartbeat": {"leases", "worker_id"},
    "/v1/worker/finish": {"items"},
    "/v1/worker/evidence": {"items"},
    "/v1/worker/release": {"leases"},
    "/v1/admin/pause": {"pool", "tenant", "workflow", "refuse_submissions"},
    "/v1/admin/resume": {"pool", "tenant", "workflow"},
}
FINISH_ITEM = {"lease", "outcome", "result", "error"}
FINISH_ERROR = {"code", "message", "retryable"}
EVIDENCE_ITEM = {"lease", "kind", "body"}
SUBMIT = {
    "workflow",
    "input",
    "pool",
    "timeout_ms",
    "priority",
    "max_attempts",
    "run_at",
    "depends_on",
    "on_dependency_failure",
    "concurrency_key",
}
TERMINAL = {"succeeded", "failed", "cancelled", "timed_out"}
RETRYABLE = {"failed", "cancelled", "timed_out"}
TENANT_PATCH = {"max_in_flight", "weight", "storage_quota_bytes", "rate_per_second", "burst"}
WORKFLOW_PATCH = {"rate_per_second", "burst", "concurrency_per_key"}


def rfc3339(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


@dataclass
class Call:
    path: str
    body: Any
    at: float  # monotonic
    conn: int  # which TCP connection carried it
    status: int = 0


@dataclass
class FakeTask:
    id: str
    workflow: str
    input: Any
    deadline_at: datetime
    # As the server counts: the attempts claimed so far (0 while queued
    # for the first time); a claim adds one, a release takes it back.
    attempt: int = 0
    max_attempts: int = 3
    state: str = "queued"
    epoch: int = 0
    pool: str = "online"
    result: Any = None
    error: Any = None
    outcome: Any = None  # the committed finish item
    renewed_at: float = 0.0  # monotonic time of the claim or last ok heartbeat
    events: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def lease(self) -> str:
        return f"dkl1.{self.id}.{self.epoch}.mac"

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant": "demo",
            "author": "tester",
            "workflow": self.workflow,
            "pool": self.pool,
            "state": self.state,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "priority": 0,
            "created_at": rfc3339(datetime.now(timezone.utc)),
            "run_at": None,
            "started_at": None,
            "finished_at": None,
            "deadline_at": rfc3339(self.deadline_at),
            "trace_id": "0af7651916cd43dd8448eb211c80319c",
            "config_version": "demo-1",
            "result": self.result,
            "error": self.error,
            "waiting_on": None,
        }


class FakeDocket:
    def __init__(
        self,
        *,
        key: str = "test-key",
        heartbeat_ms: int = 100,
        lease_ttl_ms: int = 30_000,
        realistic: bool = False,
        port: int = 0,
    ):
        """realistic: also run the server's schedulers (deadlines, lease
        recovery) and retry retryable failures, as the integration tests
        expect of a real server; off, the unit tests control every move."""
        self.key = key
        self.keys = {key}
        self.realistic = realistic
        self.workflows: dict[str, dict[str, Any]] = {}
        self.heartbeat_ms = heartbeat_ms
        self.lease_ttl_ms = lease_ttl_ms
        self.cond = threading.Condition()
        self.tasks: dict[str, FakeTask] = {}
        self.queue: list[str] = []
        self.calls: list[Call] = []
        self.violations: list[str] = []
        self.idempotency: dict[str, tuple[str, Any]] = {}
        # Flow control, as the admin API shows it: what is paused, each as
        # {scope: key} (with "refuse_submissions": True when its pause
        # refuses them), and the limits PATCHed, by "tenant:ID" or
        # "workflow:NAME". Recorded only: claims do not honour them;
        # admissions do honour a refusing pause of a workflow or pool.
        self.paused: list[dict[str, Any]] = []
        self.limits: dict[str, dict[str, Any]] = {}
        # Knobs.
        self.heartbeat_status: dict[str, str] = {}  # task id → status answered for its lease
        self.drop_finish_answers = 0  # commit, then close the connection without answer
        self.finish_errors: list[tuple[int, str, str | None]] = []  # next finish answers
        self.claim_errors: list[tuple[int, str, str | None]] = []  # next claim answers
        self.errors: dict[str, list[tuple[int, str, str | None]]] = {}  # path → next answers
        self.evidence_lease_lost: set[str] = set()
        self.released: list[str] = []  # task ids released
        self.connections = 0
        self._ids = itertools.count(1)
        self._conn_ids = itertools.count(1)
        self._socks: set[socket.socket] = set()
        self._closing = False
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self.httpd = _Server(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    # --- lifetime ---------------------------------------------------------

    def start(self) -> FakeDocket:
        self._thread.start()
        if self.realistic:
            threading.Thread(target=self._schedulers, daemon=True).start()
        return self

    def _schedulers(self) -> None:
        """Deadlines and lease recovery, every 50 ms."""
        while True:
            with self.cond:
                if self._closing:
                    return
                now = datetime.now(timezone.utc)
                for t in self.tasks.values():
                    if t.state in ("queued", "running") and t.deadline_at <= now:
                        if t.id in self.queue:
                            self.queue.remove(t.id)
                        t.epoch += 1
                        self._transition(t, "timed_out", "deadline_exceeded")
                    elif t.state == "running" and time.monotonic() - t.renewed_at > self.lease_ttl_ms / 1000:
                        t.epoch += 1
                        if t.attempt < t.max_attempts:
                            self._transition(t, "queued", "lease_lost")
                            self.queue.append(t.id)
                        else:
                            self._transition(t, "failed", "lease_lost")
                self.cond.notify_all()
                self.cond.wait(0.05)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        with self.cond:
            self._closing = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.cond:
            socks = list(self._socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join()

    def __enter__(self) -> FakeDocket:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- test helpers -----------------------------------------------------

    def add_task(
        self,
        workflow: str,
        input: Any = None,
        *,
        deadline_in: float = 60.0,
        attempt: int = 1,
        max_attempts: int = 3,
    ) -> str:
        with self.cond:
            tid = f"t{next(self._ids):05d}"
            self.tasks[tid] = FakeTask(
                tid,
                workflow,
                input,
                datetime.now(timezone.utc) + timedelta(seconds=deadline_in),
                attempt=attempt - 1,  # the claim makes it `attempt`
                max_attempts=max_attempts,
            )
            self.tasks[tid].events.append({"from": "", "to": "queued", "code": ""})
            self.queue.append(tid)
            self.cond.notify_all()
            return tid

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        end = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def calls_to(self, path: str) -> list[Call]:
        with self.cond:
            return [c for c in self.calls if c.path == path]

    def finish_items_for(self, tid: str) -> list[dict[str, Any]]:
        """Every finish item (committed or not) the worker sent for a task."""
        out = []
        for c in self.calls_to("/v1/worker/finish"):
            for item in (c.body or {}).get("items", []):
                if str(item.get("lease", "")).startswith(f"dkl1.{tid}."):
                    out.append(item)
        return out

    def _transition(self, t: FakeTask, to: str, code: str = "") -> None:
        t.events.append({"from": t.state, "to": to, "code": code})
        t.state = to

    # --- the protocol -----------------------------------------------------

    def _task_of(self, lease: Any) -> FakeTask | None:
        if not isinstance(lease, str) or not lease.startswith("dkl1."):
            return None
        parts = lease.split(".")
        if len(parts) != 4:
            return None
        return self.tasks.get(parts[1])

    def _current(self, lease: Any) -> FakeTask | None:
        t = self._task_of(lease)
        if t is None or t.state != "running" or t.lease() != lease:
            return None
        return t

    def handle(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: Any,
        body: Any,
        gone: Callable[[], bool] = lambda: False,
    ) -> tuple[int, Any, dict[str, str]]:
        if path in FIELDS:
            unknown = set(body or {}) - FIELDS[path] if isinstance(body, dict) else {"<not an object>"}
            if unknown:
                self.violations.append(f"{path}: {sorted(unknown)}")
                return 400, err("invalid_request", "unknown fields"), {}
        queued = self.errors.get(path)
        if queued:
            status, code, retry_after = queued.pop(0)
            return status, err(code, "injected"), ({"Retry-After": retry_after} if retry_after else {})
        if path == "/v1/worker/claim":
            return self._claim(body, gone)
        if path == "/v1/worker/heartbeat":
            return 200, {"leases": [{"lease": l, "status": self._beat(l)} for l in body["leases"]]}, {}
        if path == "/v1/worker/finish":
            return self._finish(body)
        if path == "/v1/worker/evidence":
            return self._evidence(body)
        if path == "/v1/worker/release":
            return self._release(body)
        return self._task_api(method, path, query, headers, body)

    def _claim(self, body: dict[str, Any], gone: Callable[[], bool]) -> tuple[int, Any, dict[str, str]]:
        if self.claim_errors:
            status, code, retry_after = self.claim_errors.pop(0)
            return status, err(code, "injected"), ({"Retry-After": retry_after} if retry_after else {})
        want = int(body.get("max", 1))
        end = time.monotonic() + int(body.get("wait_ms", 0)) / 1000.0
        names = set(body.get("workflows") or [])
        while True:
            ready = [tid for tid in self.queue if self.tasks[tid].workflow in names]
            if ready or self._closing:
                break
            left = end - time.monotonic()
            if left <= 0:
                break
            self.cond.wait(min(left, 0.02))
            if gone():
                # The client closed the connection: like the real server
                # (the request's context), give up without claiming.
                return -1, None, {}
        out = []
        for tid in ready[:want]:
            self.queue.remove(tid)
            t = self.tasks[tid]
            t.epoch += 1
            t.attempt += 1
            t.renewed_at = time.monotonic()
            t.outcome = None
            self._transition(t, "running")
            out.append({"lease": t.lease(), "task": t.json(), "input": t.input})
        return 200, {"tasks": out, "lease_ttl_ms": self.lease_ttl_ms, "heartbeat_ms": self.heartbeat_ms}, {}

    def _beat(self, lease: str) -> str:
        t = self._current(lease)
        if t is None:
            # The task moved on since this lease: say why, as the server does.
            t = self._task_of(lease)
            if t is not None and lease == f"dkl1.{t.id}.{t.epoch - 1}.mac":
                if t.state in ("cancelled", "timed_out"):
                    return t.state
            return "lease_lost"
        forced = self.heartbeat_status.get(t.id)
        if forced == "cancelled":
            t.epoch += 1
            self._transition(t, "cancelled", "cancelled")
        elif forced == "timed_out":
            t.epoch += 1
            self._transition(t, "timed_out", "deadline_exceeded")
        elif forced == "lease_lost":
            t.epoch += 1
            self._transition(t, "queued", "lease_lost")
        if not forced:
            t.renewed_at = time.monotonic()
        return forced or "ok"

    def _finish(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if self.finish_errors:
            status, code, retry_after = self.finish_errors.pop(0)
            return status, err(code, "injected"), ({"Retry-After": retry_after} if retry_after else {})
        answers = []
        for item in body["items"]:
            unknown = set(item) - FINISH_ITEM
            if unknown or (item.get("outcome") == "failed" and set(item.get("error") or {}) - FINISH_ERROR):
                self.violations.append(f"finish item: {sorted(unknown)}")
                return 400, err("invalid_request", "unknown fields"), {}
            answers.append({"lease": item["lease"], "status": self._finish_one(item)})
        status = 200
        if self.drop_finish_answers > 0:
            self.drop_finish_answers -= 1
            status = -1  # committed, but the answer is lost
        return status, {"items": answers}, {}

    def _finish_one(self, item: dict[str, Any]) -> str:
        t = self._task_of(item.get("lease"))
        if t is None:
            return "lease_lost"
        if t.outcome is not None and t.lease() == item["lease"]:
            return "ok" if t.outcome == item else "conflict"
        if self._current(item["lease"]) is None:
            return "lease_lost"
        t.outcome = item
        if item["outcome"] == "succeeded":
            t.result = item.get("result")
            self._transition(t, "succeeded")
        else:
            e = item.get("error") or {}
            t.error = {"code": e.get("code"), "message": e.get("message")}
            if self.realistic and e.get("retryable") and t.attempt < t.max_attempts:
                t.epoch += 1
                self._transition(t, "queued", str(e.get("code")))
                self.queue.append(t.id)
            else:
                self._transition(t, "failed", str(e.get("code")))
        return "ok"

    def _evidence(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        answers = []
        for item in body["items"]:
            if set(item) - EVIDENCE_ITEM:
                self.violations.append("evidence item")
                return 400, err("invalid_request", "unknown fields"), {}
            t = self._current(item["lease"])
            if t is None or t.id in self.evidence_lease_lost:
                answers.append({"lease": item["lease"], "status": "lease_lost"})
                continue
            t.evidence.append({"kind": item["kind"], "body": item["body"], "attempt": t.attempt})
            answers.append({"lease": item["lease"], "status": "ok"})
        return 200, {"items": answers}, {}

    def _release(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        answers = []
        for lease in body["leases"]:
            t = self._current(lease)
            if t is None:
                answers.append({"lease": lease, "status": "lease_lost"})
                continue
            t.epoch += 1
            t.attempt -= 1  # not charged
            self._transition(t, "queued", "shutdown")
            self.queue.append(t.id)
            self.released.append(t.id)
            answers.append({"lease": lease, "status": "ok"})
        return 200, {"leases": answers}, {}

    # --- the task API (for Client tests) -----------------------------------

    def _task_api(self, method: str, path: str, query: dict[str, list[str]], headers: Any, body: Any) -> tuple[int, Any, dict[str, str]]:
        if method == "PUT" and path.startswith("/v1/admin/workflows/"):
            name = path.rsplit("/", 1)[1]
            self.workflows[name] = {"name": name, "remote": True, "pool": "online", **(body or {})}
            return 200, self.workflows[name], {}
        if method == "POST" and path == "/v1/admin/keys":
            key = f"dk_worker_{len(self.keys)}"
            self.keys.add(key)
            return 201, {"id": f"k{len(self.keys)}", "key": key, **(body or {})}, {}
        if method == "POST" and path == "/v1/tasks":
            key = headers.get("Idempotency-Key")
            if not key:
                return 400, err("invalid_request", "Idempotency-Key is required"), {}
            return self._admit(key, body)
        if method == "POST" and path == "/v1/tasks/batch":
            results = []
            for item in body.get("tasks", []):
                item = dict(item)
                key = item.pop("idempotency_key", None)
                status, obj, _ = self._admit(key, item)
                results.append({"status": status, "task": obj} if status < 300 else {"status": status, "error": obj["error"]})
            return 200, {"results": results}, {}
        if method == "POST" and path in ("/v1/admin/pause", "/v1/admin/resume"):
            return self._pause(body or {}, path.endswith("/pause"))
        if method == "PATCH" and path.startswith("/v1/admin/"):
            return self._patch_limits(path, body or {})
        parts = path.strip("/").split("/")
        if len(parts) >= 3 and parts[:2] == ["v1", "tasks"]:
            t = self.tasks.get(parts[2])
            if t is None:
                return 404, err("not_found", "no such task"), {}
            rest = parts[3:]
            if method == "GET" and not rest:
                if "wait" in query:
                    ms = float(query["wait"][0].rstrip("ms"))
                    end = time.monotonic() + ms / 1000
                    while t.state not in TERMINAL and time.monotonic() < end:
                        self.cond.wait(end - time.monotonic())
                return 200, t.json(), {}
            if method == "POST" and rest == ["cancel"]:
                if t.state not in TERMINAL:
                    if t.id in self.queue:
                        self.queue.remove(t.id)
                    t.epoch += 1
                    self._transition(t, "cancelled", "cancelled")
                return 200, t.json(), {}
            if method == "POST" and rest == ["retry"]:
                if t.state not in RETRYABLE:
                    return 409, err("not_retryable", f"a {t.state} task cannot be retried"), {}
                t.attempt, t.result, t.error, t.outcome = 0, None, None, None
                self._transition(t, "queued", "retried")
                self.queue.append(t.id)
                return 200, t.json(), {}
            if method == "GET" and rest == ["input"]:
                return 200, t.input, {}
            if method == "GET" and rest == ["events"]:
                return 200, {"events": [{"id": i + 1, "task_id": t.id, "epoch": 0, "at": rfc3339(datetime.now(timezone.utc)), **e} for i, e in enumerate(t.events)]}, {}
            if method == "GET" and rest == ["evidence"]:
                return 200, {"evidence": [{"id": i + 1, "task_id": t.id, "epoch": 1, "created_at": rfc3339(datetime.now(timezone.utc)), **e} for i, e in enumerate(t.evidence)]}, {}
        return 404, err("not_found", "no such route"), {}

    def _pause(self, body: dict[str, Any], paused: bool) -> tuple[int, Any, dict[str, str]]:
        target = dict(body)
        refuse = target.pop("refuse_submissions", False)
        if not isinstance(refuse, bool):
            return 400, err("invalid_request", '"refuse_submissions" must be true or false'), {}
        if len(target) != 1 or not all(isinstance(v, str) and v for v in target.values()):
            return 400, err("invalid_request", 'name exactly one of "pool", "tenant" or "workflow"'), {}
        # As the server: a pause (again) sets the refusal anew, a resume
        # clears the pause whatever it refused.
        self.paused = [p for p in self.paused if {k: v for k, v in p.items() if k != "refuse_submissions"} != target]
        if paused:
            self.paused.append({**target, "refuse_submissions": True} if refuse else target)
        return 200, {"paused": [dict(p) for p in self.paused]}, {}

    def _refusing(self, scope: str, key: str) -> bool:
        return {scope: key, "refuse_submissions": True} in self.paused

    def _patch_limits(self, path: str, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        parts = path.strip("/").split("/")
        if len(parts) != 4 or parts[2] not in ("tenants", "workflows"):
            return 404, err("not_found", "no such route"), {}
        scope = parts[2][:-1]
        allowed = TENANT_PATCH if scope == "tenant" else WORKFLOW_PATCH
        if set(body) - allowed:
            self.violations.append(f"{path}: {sorted(set(body) - allowed)}")
            return 400, err("invalid_request", "unknown fields"), {}
        # null puts a limit back to its default (no rate limit, burst 0, one
        # task per concurrency key).
        defaults = {"rate_per_second": None, "burst": 0, "concurrency_per_key": 1, "max_in_flight": 0, "weight": 1}
        rule = self.limits.setdefault(f"{scope}:{parts[3]}", dict(defaults))
        for name, value in body.items():
            rule[name] = defaults.get(name) if value is None else value
        rate = rule["rate_per_second"]
        shown = {
            "paused": {scope: parts[3]} in self.paused or self._refusing(scope, parts[3]),
            "refuse_submissions": self._refusing(scope, parts[3]),
            "rate_per_second": rate,
            "burst": rule["burst"] if rate is not None else None,
        }
        if scope == "tenant":
            tenant = {"id": parts[3], "max_in_flight": rule["max_in_flight"], "weight": rule["weight"], "in_flight": 0}
            return 200, {**tenant, **shown}, {}
        return 200, {"name": parts[3], **shown, "concurrency_per_key": rule["concurrency_per_key"]}, {}

    def _admit(self, key: str | None, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if not key:
            return 400, err("invalid_request", "idempotency key is required"), {}
        if set(body) - SUBMIT:
            self.violations.append(f"submit: {sorted(set(body) - SUBMIT)}")
            return 400, err("invalid_request", "unknown fields"), {}
        if key in self.idempotency:
            tid, earlier = self.idempotency[key]
            if earlier != body:
                return 409, err("idempotency_conflict", "key reused"), {}
            return 200, self.tasks[tid].json(), {}
        spec = self.workflows.get(body["workflow"], {})
        pool = body.get("pool") or spec.get("pool") or "online"
        if self._refusing("workflow", body["workflow"]) or self._refusing("pool", pool):
            return 409, err("submissions_paused", "the task's workflow or pool is paused and refuses submissions"), {}
        tid = f"t{next(self._ids):05d}"
        timeout_ms = body.get("timeout_ms") or spec.get("timeout_ms") or 60_000
        t = FakeTask(
            tid,
            body["workflow"],
            body.get("input"),
            datetime.now(timezone.utc) + timedelta(milliseconds=timeout_ms),
            max_attempts=body.get("max_attempts") or spec.get("max_attempts") or 3,
        )
        t.events.append({"from": "", "to": "queued", "code": ""})
        self.tasks[tid] = t
        self.queue.append(tid)
        self.idempotency[key] = (tid, body)
        return 201, t.json(), {}


def err(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "trace_id": "trace-1"}}


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that closed its connection (an aborted long poll) is
        # expected; anything else is printed as usual.
        import sys

        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake: FakeDocket

    def setup(self) -> None:
        super().setup()
        fake = self.server_fake
        with fake.cond:
            fake.connections += 1
            self.conn_id = next(fake._conn_ids)
            fake._socks.add(self.connection)

    def finish(self) -> None:
        with self.server_fake.cond:
            self.server_fake._socks.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def _serve(self, method: str) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            self.close_connection = True  # the client went away mid-request
            return
        parts = urlsplit(self.path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._answer(400, err("invalid_request", "bad json"), {})
            return
        auth = self.headers.get("Authorization") or ""
        if not auth.startswith("Bearer ") or auth[len("Bearer ") :] not in fake.keys:
            self._answer(401, err("unauthenticated", "bad key"), {})
            return
        with fake.cond:
            # Recorded on receipt (a long poll is seen while it waits);
            # status is set once answered.
            call = Call(parts.path, body, time.monotonic(), self.conn_id)
            fake.calls.append(call)
            fake.cond.notify_all()
            status, obj, extra = fake.handle(
                method, parts.path, parse_qs(parts.query), self.headers, body, self._gone
            )
            call.status = status
            fake.cond.notify_all()
        if status == -1:
            # Drop the answer: the client sees the connection closed.
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self._answer(status, obj, extra)

    def _gone(self) -> bool:
        """Whether the client closed the connection (EOF readable)."""
        try:
            return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _answer(self, status: int, obj: Any, extra: dict[str, str]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    """Serves a realistic fake on a port, to run the integration tests
    without a Docket server (a smoke test of the tests themselves):

        cd sdk/python && python3 -m tests.fake_server --port 18181 --lease-ttl-ms 2000
    """
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--lease-ttl-ms", type=int, default=2000)
    ap.add_argument("--heartbeat-ms", type=int, default=500)
    args = ap.parse_args()
    fake = FakeDocket(
        heartbeat_ms=args.heartbeat_ms, lease_ttl_ms=args.lease_ttl_ms, realistic=True, port=args.port
    ).start()
    print(f"DOCKET_URL={fake.url} DOCKET_ADMIN_KEY={fake.key}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.close()


if __name__ == "__main__":
    main()
