"""A small client of the task API: submit, read, wait, cancel, retry,
history; and, with an admin key, flow control (pauses and limits).

    client = docket.Client("http://127.0.0.1:8080", key)
    t = client.submit("images.resize", {"url": "…"}, idempotency_key="order-7")
    done = client.get(t.id, wait=30)   # holds until terminal or 30 s
"""

from __future__ import annotations

import enum
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterable, Mapping

from ._http import ConnectionPool, Endpoint, check, encode
from ._times import format_time, parse_time
from ._version import SDK
from .errors import DocketError

__all__ = [
    "BatchResult",
    "Client",
    "Event",
    "Evidence",
    "TERMINAL_STATES",
    "TaskError",
    "TaskInfo",
    "TenantLimits",
    "WorkflowLimits",
]

TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled", "timed_out"})

# MAX_SERVER_WAIT is the longest one long poll may ask the server to hold.
MAX_SERVER_WAIT = 60.0
# MAX_BATCH is the most tasks one submit_batch may carry.
MAX_BATCH = 1000

# Submission options and their JSON names.
_OPTIONS = (
    "pool",
    "timeout_ms",
    "priority",
    "max_attempts",
    "run_at",
    "depends_on",
    "on_dependency_failure",
    "concurrency_key",
)


@dataclass(frozen=True)
class TaskError:
    """Why a task failed: a stable code and a short human reason."""

    code: str
    message: str = ""


@dataclass(frozen=True)
class TaskInfo:
    """A task as the server shows it. ``raw`` is the whole JSON object
    (fields this SDK does not know yet included)."""

    id: str
    tenant: str
    author: str
    workflow: str
    pool: str
    state: str
    attempt: int
    max_attempts: int
    priority: int
    created_at: datetime | None
    run_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    deadline_at: datetime | None
    trace_id: str
    config_version: str
    result: Any
    error: TaskError | None
    waiting_on: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)
    # True when submit() got an earlier task with the same idempotency key
    # and body (HTTP 200 rather than 201).
    replayed: bool = False

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], *, replayed: bool = False) -> TaskInfo:
        err = obj.get("error")
        return cls(
            id=str(obj.get("id", "")),
            tenant=str(obj.get("tenant", "")),
            author=str(obj.get("author", "")),
            workflow=str(obj.get("workflow", "")),
            pool=str(obj.get("pool", "")),
            state=str(obj.get("state", "")),
            attempt=int(obj.get("attempt") or 0),
            max_attempts=int(obj.get("max_attempts") or 0),
            priority=int(obj.get("priority") or 0),
            created_at=parse_time(obj.get("created_at")),
            run_at=parse_time(obj.get("run_at")),
            started_at=parse_time(obj.get("started_at")),
            finished_at=parse_time(obj.get("finished_at")),
            deadline_at=parse_time(obj.get("deadline_at")),
            trace_id=str(obj.get("trace_id") or ""),
            config_version=str(obj.get("config_version") or ""),
            result=obj.get("result"),
            error=(
                TaskError(str(err.get("code", "")), str(err.get("message") or ""))
                if isinstance(err, dict)
                else None
            ),
            waiting_on=obj.get("waiting_on") if isinstance(obj.get("waiting_on"), str) else None,
            raw=dict(obj),
            replayed=replayed,
        )


@dataclass(frozen=True)
class Event:
    """One transition of a task's history. ``from_state`` is empty for the
    admission event."""

    id: int
    task_id: str
    from_state: str
    to_state: str
    epoch: int
    code: str
    at: datetime | None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Event:
        return cls(
            id=int(obj.get("id") or 0),
            task_id=str(obj.get("task_id", "")),
            from_state=str(obj.get("from") or ""),
            to_state=str(obj.get("to") or ""),
            epoch=int(obj.get("epoch") or 0),
            code=str(obj.get("code") or ""),
            at=parse_time(obj.get("at")),
        )


@dataclass(frozen=True)
class Evidence:
    """One evidence item a task's workflow recorded."""

    id: int
    task_id: str
    attempt: int
    epoch: int
    kind: str
    body: Any
    created_at: datetime | None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Evidence:
        return cls(
            id=int(obj.get("id") or 0),
            task_id=str(obj.get("task_id", "")),
            attempt=int(obj.get("attempt") or 0),
            epoch=int(obj.get("epoch") or 0),
            kind=str(obj.get("kind", "")),
            body=obj.get("body"),
            created_at=parse_time(obj.get("created_at")),
        )


@dataclass(frozen=True)
class BatchResult:
    """The answer to one task of a batch: ``status`` is what a single submit
    would have answered (201 new, 200 replay, 409, 429, 400, 413); ``task``
    is set for 201 and 200, ``error`` otherwise."""

    status: int
    task: TaskInfo | None
    error: DocketError | None


@dataclass(frozen=True)
class TenantLimits:
    """A tenant's limits as the admin API shows them: whether it is paused
    (and whether that pause refuses its submissions), the rate limit on its
    starts (``None`` when it has none), its in-flight limit (0: unlimited)
    and weight. ``raw`` is the whole JSON object."""

    id: str
    paused: bool
    rate_per_second: int | None
    burst: int | None
    max_in_flight: int
    weight: int
    raw: dict[str, Any] = field(repr=False, compare=False)
    # True while the tenant is paused with refuse_submissions (its
    # submissions answer 409 submissions_paused). Last, with a default, so
    # that positional construction keeps its meaning.
    refuse_submissions: bool = False

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TenantLimits:
        return cls(
            id=str(obj.get("id", "")),
            paused=bool(obj.get("paused")),
            rate_per_second=_optional_int(obj.get("rate_per_second")),
            burst=_optional_int(obj.get("burst")),
            max_in_flight=int(obj.get("max_in_flight") or 0),
            weight=int(obj.get("weight") or 0),
            raw=dict(obj),
            refuse_submissions=obj.get("refuse_submissions") is True,
        )


@dataclass(frozen=True)
class WorkflowLimits:
    """A workflow's flow control: whether it is paused (and whether that
    pause refuses its submissions), the rate limit on its starts across
    every tenant (``None`` when it has none), and how many tasks of one
    concurrency key may run at once. ``raw`` is the whole JSON object."""

    name: str
    paused: bool
    rate_per_second: int | None
    burst: int | None
    concurrency_per_key: int
    raw: dict[str, Any] = field(repr=False, compare=False)
    # True while the workflow is paused with refuse_submissions (last, with
    # a default, as in TenantLimits).
    refuse_submissions: bool = False

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> WorkflowLimits:
        return cls(
            name=str(obj.get("name", "")),
            paused=bool(obj.get("paused")),
            rate_per_second=_optional_int(obj.get("rate_per_second")),
            burst=_optional_int(obj.get("burst")),
            concurrency_per_key=int(obj.get("concurrency_per_key") or 1),
            raw=dict(obj),
            refuse_submissions=obj.get("refuse_submissions") is True,
        )


class _Keep(enum.Enum):
    """The default of a limit left out of a change: it stays as it is."""

    KEEP = "keep"


_KEEP = _Keep.KEEP


def _optional_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


def _limits_body(**limits: int | None | _Keep) -> dict[str, int | None]:
    """The body of a PATCH of limits: the limits given (None sends null,
    which removes the limit), not those left out."""
    return {name: value for name, value in limits.items() if value is not _KEEP}


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def _submit_body(workflow: str, input: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"docket: unknown submit options: {', '.join(sorted(unknown))}")
    body: dict[str, Any] = {"workflow": workflow, "input": input}
    for name in _OPTIONS:
        value = options.get(name)
        if value is None:
            continue
        if name == "run_at" and isinstance(value, datetime):
            value = format_time(value)
        if name == "depends_on":
            value = list(value)
        body[name] = value
    return body


class Client:
    """Calls one Docket server with one API key; safe for concurrent use
    (kept-alive connections are pooled).

    Every error answer raises DocketError (``.code``, ``.status``,
    ``.retry_after``); a call that gets no answer raises DocketError with
    code ``connection_error``. Calls are not retried, except once on a new
    connection when the server had closed an idle one.
    """

    def __init__(self, url: str, key: str, *, timeout: float = 30.0) -> None:
        self._endpoint = Endpoint(url, key, timeout=timeout, user_agent="docket-" + SDK)
        self._pool = ConnectionPool(self._endpoint)
        self._timeout = timeout

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Any call of the HTTP contract (e.g. the admin API); returns the
        decoded JSON answer."""
        return self._call(method, path, body, query=query, headers=headers, timeout=timeout)[1]

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        if query:
            path += "?" + urllib.parse.urlencode(query)
        data = encode(body) if body is not None else None
        answer = self._pool.request(method, path, data, headers=headers, timeout=timeout)
        return answer.status, check(answer)

    # --- tasks ----------------------------------------------------------------

    def submit(
        self,
        workflow: str,
        input: Any = None,
        *,
        idempotency_key: str | None = None,
        traceparent: str | None = None,
        **options: Any,
    ) -> TaskInfo:
        """Submits a task. ``idempotency_key`` makes the submission safe to
        retry (same key, same body → the same task, ``replayed`` True); a
        random one is made when none is given. Options: ``pool``,
        ``timeout_ms``, ``priority``, ``max_attempts``, ``run_at`` (datetime
        or RFC 3339), ``depends_on``, ``on_dependency_failure``,
        ``concurrency_key``."""
        body = _submit_body(workflow, input, options)
        headers = {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}
        if traceparent:
            headers["traceparent"] = traceparent
        status, obj = self._call("POST", "/v1/tasks", body, headers=headers)
        return TaskInfo.from_json(obj, replayed=status == 200)

    def submit_batch(
        self, tasks: Iterable[Mapping[str, Any]], *, traceparent: str | None = None
    ) -> list[BatchResult]:
        """Submits up to 1,000 tasks in one call, each a mapping with
        ``workflow``, ``input``, optional ``idempotency_key`` (random when
        absent) and the options of ``submit``. Returns one result per task,
        in order; the batch is admitted in one transaction, so when this
        raises nothing of it was admitted."""
        items = []
        for t in tasks:
            t = dict(t)
            key = t.pop("idempotency_key", None) or uuid.uuid4().hex
            workflow = t.pop("workflow")
            input = t.pop("input", None)
            item = {"idempotency_key": key}
            item.update(_submit_body(workflow, input, t))
            items.append(item)
        if not 1 <= len(items) <= MAX_BATCH:
            raise ValueError("docket: a batch carries 1 to 1000 tasks")
        headers = {"traceparent": traceparent} if traceparent else None
        _, obj = self._call("POST", "/v1/tasks/batch", {"tasks": items}, headers=headers)
        out = []
        for r in obj.get("results") or []:
            status = int(r.get("status") or 0)
            task = TaskInfo.from_json(r["task"], replayed=status == 200) if r.get("task") else None
            error = None
            if isinstance(r.get("error"), dict):
                e = r["error"]
                error = DocketError(
                    str(e.get("code", "")), str(e.get("message") or ""), status=status
                )
            out.append(BatchResult(status, task, error))
        return out

    def get(self, id: str, wait: float | timedelta | None = None) -> TaskInfo:
        """Reads a task. With ``wait`` (seconds), holds until the task is
        terminal or the wait has passed (long polls of at most 60 s each,
        paused and repeated when the server holds too many)."""
        path = "/v1/tasks/" + urllib.parse.quote(id, safe="")
        if wait is None or _seconds(wait) <= 0:
            return TaskInfo.from_json(self._call("GET", path)[1])
        end = time.monotonic() + _seconds(wait)
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return TaskInfo.from_json(self._call("GET", path)[1])
            hold = max(min(left, MAX_SERVER_WAIT), 0.001)
            query = {"wait": f"{int(hold * 1000)}ms"}
            try:
                _, obj = self._call("GET", path, query=query, timeout=hold + self._timeout)
            except DocketError as err:
                if err.code != "too_many_requests":
                    raise
                time.sleep(min(max(err.retry_after or 0.0, 0.1), max(left, 0.0)))
                continue
            task = TaskInfo.from_json(obj)
            if task.terminal or hold < MAX_SERVER_WAIT:
                return task

    def cancel(self, id: str) -> TaskInfo:
        """Cancels a queued or running task; returns it cancelled, or in the
        terminal state it had already reached."""
        path = "/v1/tasks/" + urllib.parse.quote(id, safe="") + "/cancel"
        return TaskInfo.from_json(self._call("POST", path)[1])

    def retry(self, id: str) -> TaskInfo:
        """Queues a failed, timed_out or cancelled task again and returns it:
        same ID, input and idempotency key, its attempt budget renewed. A
        task that succeeded or is not terminal raises DocketError
        ``not_retryable`` (409); a full pool or tenant raises ``queue_full``
        or ``tenant_quota_exceeded`` (429, with ``retry_after``), as a
        submission does."""
        path = "/v1/tasks/" + urllib.parse.quote(id, safe="") + "/retry"
        return TaskInfo.from_json(self._call("POST", path)[1])

    def input(self, id: str) -> Any:
        """The task's input exactly as admitted, decoded from JSON."""
        path = "/v1/tasks/" + urllib.parse.quote(id, safe="") + "/input"
        return self._call("GET", path)[1]

    def events(self, id: str) -> list[Event]:
        """The task's transitions, oldest first."""
        path = "/v1/tasks/" + urllib.parse.quote(id, safe="") + "/events"
        return [Event.from_json(e) for e in self._call("GET", path)[1].get("events") or []]

    def evidence(self, id: str) -> list[Evidence]:
        """The evidence the task's workflow recorded."""
        path = "/v1/tasks/" + urllib.parse.quote(id, safe="") + "/evidence"
        return [Evidence.from_json(e) for e in self._call("GET", path)[1].get("evidence") or []]

    # --- flow control (an admin key) -----------------------------------------

    def pause(
        self,
        *,
        pool: str | None = None,
        tenant: str | None = None,
        workflow: str | None = None,
        refuse_submissions: bool = False,
    ) -> list[dict[str, Any]]:
        """Pauses one pool (``"online"``/``"offline"``), tenant or workflow:
        name exactly one. Nothing new of it starts, on any node; running
        tasks finish. Submissions are still admitted (queued, with
        ``waiting_on`` ``"paused"``) unless ``refuse_submissions`` is True:
        then they raise DocketError ``submissions_paused`` (409; nothing is
        written, the same request is admitted after the resume) until it is
        resumed. Pausing what is paused already sets its
        ``refuse_submissions`` anew. Returns everything paused, each as
        ``{"pool": …}``, ``{"tenant": …}`` or ``{"workflow": …}``, with
        ``"refuse_submissions": True`` in those whose pause refuses
        submissions."""
        if not isinstance(refuse_submissions, bool):
            raise TypeError("docket: refuse_submissions must be True or False")
        return self._pause("/v1/admin/pause", pool, tenant, workflow, refuse_submissions)

    def resume(
        self, *, pool: str | None = None, tenant: str | None = None, workflow: str | None = None
    ) -> list[dict[str, Any]]:
        """Resumes what ``pause`` paused (name exactly one), refusing
        submissions or not; its waiting tasks start in the usual order and
        its submissions are admitted again. Returns what is still paused,
        as ``pause`` does."""
        return self._pause("/v1/admin/resume", pool, tenant, workflow)

    def _pause(
        self,
        path: str,
        pool: str | None,
        tenant: str | None,
        workflow: str | None,
        refuse_submissions: bool = False,
    ) -> list[dict[str, Any]]:
        named = {"pool": pool, "tenant": tenant, "workflow": workflow}
        target: dict[str, Any] = {scope: key for scope, key in named.items() if key is not None}
        if len(target) != 1:
            raise TypeError("docket: name exactly one of pool, tenant or workflow")
        if refuse_submissions:
            # Sent only when asked: a server that predates the option then
            # refuses the unknown field rather than pausing without it.
            target["refuse_submissions"] = True
        return [dict(p) for p in self._call("POST", path, target)[1].get("paused") or []]

    def set_tenant_rate_limit(
        self,
        tenant: str,
        *,
        rate_per_second: int | None | _Keep = _KEEP,
        burst: int | None | _Keep = _KEEP,
    ) -> TenantLimits:
        """Limits the starts of a tenant's tasks, all nodes together: in no
        one-second window more than ``rate_per_second + burst``. ``None``
        removes a limit; one left out stays as it is. A missing tenant is
        created. Returns the tenant's limits."""
        path = "/v1/admin/tenants/" + urllib.parse.quote(tenant, safe="")
        body = _limits_body(rate_per_second=rate_per_second, burst=burst)
        return TenantLimits.from_json(self._call("PATCH", path, body)[1])

    def set_workflow_limits(
        self,
        name: str,
        *,
        rate_per_second: int | None | _Keep = _KEEP,
        burst: int | None | _Keep = _KEEP,
        concurrency_per_key: int | None | _Keep = _KEEP,
    ) -> WorkflowLimits:
        """Sets a workflow's limits (built-in or remote): the rate limit on
        its starts across every tenant, and how many tasks of one
        ``concurrency_key`` run at once (default 1). ``None`` removes a
        limit (the concurrency goes back to 1); one left out stays as it
        is. Returns the workflow's limits."""
        path = "/v1/admin/workflows/" + urllib.parse.quote(name, safe="")
        body = _limits_body(
            rate_per_second=rate_per_second, burst=burst, concurrency_per_key=concurrency_per_key
        )
        return WorkflowLimits.from_json(self._call("PATCH", path, body)[1])
