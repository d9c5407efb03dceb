"""The Worker: claims remote tasks, runs their handlers on a fixed number
of slots, heartbeats their leases, and finishes them.

    worker = docket.Worker("http://127.0.0.1:8080", key, slots=8)

    @worker.workflow("images.resize")
    def resize(task: docket.Task) -> dict:
        ...
        return {"url": url}

    worker.run(install_signal_handlers=True)  # until SIGINT/SIGTERM

Four kinds of threads, each with its own kept-alive connection: the claim
loop (the thread of ``run()``), the heartbeater, the finisher, and the slots
(handlers; their evidence writes share a small pool of connections).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
import traceback
from datetime import timedelta
from types import TracebackType
from typing import Any, Callable, Mapping, TypeVar

from ._backoff import Backoff, jitter
from ._finisher import Finisher, Outcome
from ._heartbeater import Heartbeater
from ._http import Connection, ConnectionPool, Endpoint, encode, error_of, retryable
from ._lease_table import LeaseTable
from ._slots import SlotPool
from ._version import SDK
from .errors import DocketError, LeaseLost, TaskCancelled, TaskFailure
from .task import Task

__all__ = ["Handler", "Worker"]

Handler = Callable[[Task], Any]
H = TypeVar("H", bound=Handler)

# MAX_CLAIM is the most tasks one claim may ask for.
MAX_CLAIM = 1000
# MAX_WAIT_MS is the longest long poll a claim may ask for.
MAX_WAIT_MS = 60_000
# MAX_MESSAGE_BYTES bounds a failure's message (the server's limit).
MAX_MESSAGE_BYTES = 1024
# RELEASE_CHUNK is the most leases sent in one release call.
RELEASE_CHUNK = 1000

_log = logging.getLogger("docket.worker")


def default_worker_id() -> str:
    """``host/pid-N``: visible ASCII, at most 128 characters."""
    raw = f"{socket.gethostname()}/pid-{os.getpid()}"
    clean = "".join(c if "!" <= c <= "~" else "-" for c in raw)
    return clean[-128:]


def _seconds(value: float | timedelta) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


class Worker:
    """Runs the handlers of registered remote workflows.

    Args:
        url: the server, e.g. ``http://127.0.0.1:8080``.
        key: a worker key (role ``worker``).
        slots: how many handlers run at once (threads); the worker never
            claims more tasks than it has free slots.
        pool: ``online`` or ``offline`` to claim from one pool only; None
            claims from both.
        worker_id: how operators see this process (``GET /v1/admin/workers``);
            default ``host/pid-N``.
        wait_ms: how long one claim waits on the server while there is
            nothing to claim (long poll), 0..60,000.
        shutdown_grace: seconds (or a timedelta) that running tasks get to
            finish after ``stop()`` before they are cancelled (reason
            ``shutdown``) and their leases handed back.
        flush_timeout: seconds that pending outcomes get to be sent at
            shutdown when the server is unreachable.
        timeout: seconds one call (other than a long poll) may take.
        handlers: workflow name → handler, as ``handle()`` would register.
        logger: where to log; default ``logging.getLogger("docket.worker")``.
    """

    def __init__(
        self,
        url: str,
        key: str,
        *,
        slots: int = 10,
        pool: str | None = None,
        worker_id: str | None = None,
        wait_ms: int = 20_000,
        shutdown_grace: float | timedelta = 10.0,
        flush_timeout: float | timedelta = 30.0,
        timeout: float = 30.0,
        handlers: Mapping[str, Handler] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if not isinstance(slots, int) or slots < 1:
            raise ValueError("docket: slots must be a positive integer")
        if pool not in (None, "online", "offline"):
            raise ValueError('docket: pool must be "online", "offline" or None')
        if not isinstance(wait_ms, int) or not 0 <= wait_ms <= MAX_WAIT_MS:
            raise ValueError("docket: wait_ms must be an integer in 0..60000")
        worker_id = worker_id or default_worker_id()
        if not 1 <= len(worker_id) <= 128 or not all("!" <= c <= "~" for c in worker_id):
            raise ValueError("docket: worker_id must be 1..128 visible ASCII characters")
        self._endpoint = Endpoint(url, key, timeout=timeout, user_agent="docket-" + SDK)
        self._slots_n = slots
        self._pool = pool
        self.worker_id = worker_id
        self._wait_ms = wait_ms
        self._grace = _seconds(shutdown_grace)
        self._flush_timeout = _seconds(flush_timeout)
        self._log = logger or _log
        self._handlers: dict[str, Handler] = {}

        self._lock = threading.RLock()  # reentrant: stop() may run in a signal handler
        self._started = False
        self._stopping = threading.Event()
        self._done = threading.Event()
        self._drain_deadline = float("inf")  # monotonic; set by stop()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        # Made in _serve; None until then.
        self._claim_conn: Connection | None = None
        self._slots: SlotPool | None = None
        self._leases = LeaseTable()
        self._evidence_pool: ConnectionPool | None = None
        self._heartbeater: Heartbeater | None = None
        self._finisher: Finisher | None = None
        self._counts = {"claimed": 0, "completed": 0, "dropped": 0, "released": 0}
        self._counts_lock = threading.Lock()
        for name, fn in (handlers or {}).items():
            self.handle(name, fn)

    # --- registration ---------------------------------------------------------

    def handle(self, workflow: str, fn: Handler) -> None:
        """Registers ``fn`` as the handler of ``workflow`` (a remote workflow
        an admin registered on the server)."""
        if not isinstance(workflow, str) or not workflow:
            raise ValueError("docket: a workflow name is a non-empty string")
        if not callable(fn):
            raise TypeError("docket: a handler must be callable")
        with self._lock:
            if self._started:
                raise RuntimeError("docket: register handlers before the worker runs")
            if workflow in self._handlers:
                raise ValueError(f"docket: workflow {workflow!r} already has a handler")
            if len(self._handlers) >= 100:
                raise ValueError("docket: a worker runs at most 100 workflows")
            self._handlers[workflow] = fn

    def workflow(self, name: str) -> Callable[[H], H]:
        """Decorator form of ``handle``::

        @worker.workflow("images.resize")
        def resize(task): ...
        """

        def register(fn: H) -> H:
            self.handle(name, fn)
            return fn

        return register

    # --- lifetime -------------------------------------------------------------

    def run(self, *, install_signal_handlers: bool = False) -> None:
        """Runs the worker on this thread until ``stop()`` (from a handler,
        another thread, or, with ``install_signal_handlers``, SIGINT or
        SIGTERM: the first stops gracefully, a second cancels at once).

        Returns after the graceful shutdown. Raises DocketError when the
        server refuses the claims for good (a bad key, an unregistered
        workflow).
        """
        self._begin()
        restore = self._install_signal_handlers() if install_signal_handlers else None
        try:
            self._serve()
        finally:
            if restore is not None:
                restore()
        if self._error is not None:
            raise self._error

    def start(self) -> None:
        """Runs the worker on a background thread; ``stop()`` and ``join()``
        end it. ``with worker:`` does the same."""
        self._begin()
        self._thread = threading.Thread(target=self._serve_background, name="docket-worker")
        self._thread.start()

    def stop(self, *, grace: float | timedelta | None = None) -> None:
        """Begins the graceful shutdown and returns at once (safe from a
        signal handler or a handler): no more claims; running tasks get
        ``grace`` seconds (default ``shutdown_grace``) to finish, then are
        cancelled with reason ``shutdown`` and their leases released;
        pending outcomes are flushed. Calling it again with a smaller grace
        shortens the wait. ``join()`` waits for the end."""
        g = self._grace if grace is None else _seconds(grace)
        with self._lock:
            self._drain_deadline = min(self._drain_deadline, time.monotonic() + max(g, 0.0))
            first = not self._stopping.is_set()
            self._stopping.set()
            conn, slots = self._claim_conn, self._slots
        if first:
            self._log.info("worker stopping: worker_id=%s", self.worker_id)
        if conn is not None:
            conn.abort()  # ends a long poll in flight
        if slots is not None:
            slots.wake()

    def join(self, timeout: float | None = None) -> bool:
        """Waits until the worker has shut down; True if it has."""
        with self._lock:
            started = self._started
        if not started:
            return True
        return self._done.wait(timeout)

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self.join()
        if exc is None and self._error is not None:
            raise self._error

    @property
    def error(self) -> BaseException | None:
        """What ended the worker, if not ``stop()``: the claim's refusal."""
        return self._error

    @property
    def stats(self) -> dict[str, int]:
        """Counters: tasks claimed, completed (an outcome was produced),
        dropped (cancelled before the handler returned), released; finish
        answers ok / conflict / lease_lost; heartbeat calls; free slots."""
        with self._counts_lock:
            out = dict(self._counts)
        fin, hb, slots = self._finisher, self._heartbeater, self._slots
        out["finished_ok"] = fin.ok if fin else 0
        out["finish_conflict"] = fin.conflict if fin else 0
        out["finish_lease_lost"] = fin.lease_lost if fin else 0
        out["finish_calls"] = fin.calls if fin else 0
        out["heartbeat_calls"] = hb.calls if hb else 0
        out["held"] = len(self._leases)
        out["free_slots"] = slots.free if slots else self._slots_n
        return out

    def _begin(self) -> None:
        with self._lock:
            if self._started:
                raise RuntimeError("docket: a Worker runs once")
            if not self._handlers:
                raise RuntimeError("docket: register at least one handler before running")
            self._started = True

    def _serve_background(self) -> None:
        try:
            self._serve()
        except BaseException as exc:  # kept for join()/__exit__
            if self._error is None:
                self._error = exc

    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("docket: signal handlers can only be installed on the main thread")
        seen = [0]

        def on_signal(signum: int, frame: object) -> None:
            seen[0] += 1
            if seen[0] == 1:
                self.stop()
            else:
                self.stop(grace=0)

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for s, h in previous.items():
                signal.signal(s, h)

        return restore

    def _serve(self) -> None:
        ep = self._endpoint
        with self._lock:
            self._claim_conn = Connection(ep)
            self._slots = SlotPool(self._slots_n)
            if self._stopping.is_set():
                self._claim_conn.abort()
        self._evidence_pool = ConnectionPool(ep, max_idle=min(self._slots_n, 64))
        self._heartbeater = Heartbeater(
            Connection(ep),
            self._leases,
            worker_id=self.worker_id,
            log=self._log,
            on_cancel=self._cancelled,
            timeout=ep.timeout,
        )
        self._finisher = Finisher(Connection(ep), self._leases, log=self._log)
        self._slots.start()
        self._heartbeater.start()
        self._finisher.start()
        self._log.info(
            "worker started: worker_id=%s slots=%d workflows=%s",
            self.worker_id,
            self._slots_n,
            ",".join(sorted(self._handlers)),
        )
        try:
            self._claim_loop()
        except BaseException:
            self.stop()
            raise
        finally:
            try:
                self._shutdown()
            finally:
                self._done.set()

    # --- claiming -------------------------------------------------------------

    def _claim_loop(self) -> None:
        assert self._claim_conn is not None and self._slots is not None
        assert self._heartbeater is not None
        names = sorted(self._handlers)
        network = Backoff(0.1, 10.0)
        overload = Backoff(1.0, 30.0)
        long_poll = self._wait_ms / 1000.0
        while not self._stopping.is_set():
            free = self._slots.wait_free(self._stopping.is_set)
            if free <= 0:
                break
            want = min(free, MAX_CLAIM)
            body: dict[str, Any] = {
                "workflows": names,
                "max": want,
                "wait_ms": self._wait_ms,
                "worker_id": self.worker_id,
                "slots": self._slots_n,
                "sdk": SDK,
            }
            if self._pool is not None:
                body["pool"] = self._pool
            started = time.monotonic()
            try:
                answer = self._claim_conn.request(
                    "POST",
                    "/v1/worker/claim",
                    encode(body),
                    timeout=long_poll + self._endpoint.timeout,
                )
            except DocketError as err:
                if self._stopping.is_set():
                    break
                delay = network.next()
                self._log.warning("claim failed, retrying in %.2fs: code=%s", delay, err.code)
                self._stopping.wait(delay)
                continue
            if not 200 <= answer.status <= 299:
                err = error_of(answer)
                if retryable(err):
                    delay = overload.next(err.retry_after or 0.0)
                    self._log.warning(
                        "claim refused, retrying in %.2fs: code=%s status=%s",
                        delay,
                        err.code,
                        err.status,
                    )
                    self._stopping.wait(delay)
                    continue
                # A refusal that a retry will not change: a bad key, a
                # workflow not registered, a server without the worker API.
                hint = " (does this server have the worker API?)" if err.status == 404 else ""
                self._log.error(
                    "claim refused, stopping the worker: code=%s status=%s%s",
                    err.code,
                    err.status,
                    hint,
                )
                self._error = err
                self.stop()
                break
            try:
                data = answer.json()
                items = data.get("tasks") or []
                if not isinstance(items, list):
                    raise ValueError("tasks is not a list")
            except (ValueError, AttributeError):
                delay = network.next()
                self._log.warning("claim answer is not valid, retrying in %.2fs", delay)
                self._stopping.wait(delay)
                continue
            network.reset()
            overload.reset()
            self._heartbeater.set_timing(data.get("heartbeat_ms"), data.get("lease_ttl_ms"))
            got = self._accept(items)
            if got:
                self._heartbeater.poke()
            if got == 0:
                # An empty answer that came early (no long poll, or another
                # worker took the task): pause, so as not to spin.
                if time.monotonic() - started < min(long_poll, 1.0) / 2:
                    self._stopping.wait(jitter(0.05, 0.25))
            elif got < want:
                # A thin claim: the backlog is short. Let a few tasks gather
                # rather than claim them one by one.
                self._stopping.wait(jitter(0.005, 0.025))

    def _accept(self, items: list[Any]) -> int:
        assert self._slots is not None and self._finisher is not None
        got = 0
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("lease"), str):
                continue
            raw = item.get("task") if isinstance(item.get("task"), dict) else {}
            try:
                task = Task(
                    item["lease"],
                    raw,
                    item.get("input"),
                    writer=self._write_evidence,
                    reader=self._read_dependencies,
                    traceparent=str(item.get("traceparent") or ""),
                )
            except (TypeError, ValueError):
                # Not the contract's task object: leave the lease to expire.
                self._log.error("claimed a task that does not match the contract; skipped")
                continue
            got += 1
            self._leases.add(task)
            with self._counts_lock:
                self._counts["claimed"] += 1
            if self._stopping.is_set():
                continue  # claimed while stopping: released at shutdown
            handler = self._handlers.get(task.workflow)
            if handler is None:
                # The server sent a workflow this worker did not ask for.
                self._log.error(
                    "claimed a task of a workflow without handler: task_id=%s", task.id
                )
                if task._complete():
                    self._finisher.put(self._failure(task, "workflow_error", "no handler", False))
                continue
            self._slots.submit(lambda t=task, h=handler: self._execute(t, h))
        return got

    # --- running --------------------------------------------------------------

    def _execute(self, task: Task, handler: Handler) -> None:
        assert self._finisher is not None
        outcome: Outcome | None = None
        try:
            result = handler(task)
        except TaskFailure as f:
            outcome = self._failure(task, str(f.code), str(f.message or ""), bool(f.retryable))
        except LeaseLost:
            if task._cancel("lease_lost"):
                self._cancelled(task, "lease_lost")
        except BaseException as exc:
            if isinstance(exc, TaskCancelled) and task.cancelled.is_set():
                pass  # the handler stopped as asked; nothing to send
            else:
                self._log_exception(task, exc)
                outcome = self._failure(task, "workflow_error", type(exc).__name__, True)
        else:
            try:
                result_json = json.dumps(
                    result, separators=(",", ":"), ensure_ascii=False, allow_nan=False
                )
            except (TypeError, ValueError, RecursionError) as exc:
                self._log.warning(
                    "handler result is not JSON-serialisable (%s): task_id=%s workflow=%s",
                    type(exc).__name__,
                    task.id,
                    task.workflow,
                )
                outcome = self._failure(
                    task,
                    "workflow_error",
                    f"the result is not JSON-serialisable ({type(exc).__name__})",
                    False,
                )
            else:
                item = (
                    '{"lease":'
                    + json.dumps(task._lease)
                    + ',"outcome":"succeeded","result":'
                    + result_json
                    + "}"
                )
                outcome = Outcome(task, item, True)
        if task._deadline is not None and time.time() > task._deadline:
            # The server has timed the task out: its result would be fenced.
            self._leases.remove(task._lease)
            if task._cancel("timed_out"):
                self._cancelled(task, "timed_out")
        if outcome is not None and task._complete():
            with self._counts_lock:
                self._counts["completed"] += 1
            self._finisher.put(outcome)
            return
        if task.cancelled.is_set():
            with self._counts_lock:
                self._counts["dropped"] += 1
            self._log.debug(
                "outcome dropped: task_id=%s reason=%s", task.id, task.cancel_reason
            )

    def _failure(self, task: Task, code: str, message: str, retryable: bool) -> Outcome:
        msg = message.encode("utf-8", "replace")[:MAX_MESSAGE_BYTES].decode("utf-8", "ignore")
        item = encode(
            {
                "lease": task._lease,
                "outcome": "failed",
                "error": {"code": code, "message": msg, "retryable": retryable},
            }
        ).decode()
        return Outcome(task, item, False)

    def _log_exception(self, task: Task, exc: BaseException) -> None:
        # The class and where it was raised, never the exception's text: it
        # may quote the input.
        where = ""
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            last = frames[-1]
            where = f" at {os.path.basename(last.filename)}:{last.lineno} in {last.name}"
        self._log.warning(
            "handler raised %s%s: task_id=%s workflow=%s attempt=%d",
            type(exc).__name__,
            where,
            task.id,
            task.workflow,
            task.attempt,
        )
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug("handler stack (no message):\n%s", "".join(traceback.format_list(frames)))

    def _cancelled(self, task: Task, reason: str) -> None:
        self._log.info(
            "task cancelled: task_id=%s workflow=%s reason=%s", task.id, task.workflow, reason
        )

    def _read_dependencies(self, task: Task) -> list[dict[str, Any]]:
        assert self._evidence_pool is not None
        data = encode({"lease": task._lease})
        backoff = Backoff(0.1, 2.0)
        tries = 4
        for attempt in range(1, tries + 1):
            try:
                answer = self._evidence_pool.request("POST", "/v1/worker/dependencies", data)
            except DocketError:
                if attempt == tries:
                    raise
                if task.cancelled.wait(backoff.next()) and task.cancel_reason != "shutdown":
                    raise LeaseLost()
                continue
            if 200 <= answer.status <= 299:
                try:
                    body = answer.json() or {}
                    status, deps = body.get("status"), body.get("dependencies")
                except (ValueError, AttributeError):
                    raise DocketError("http_error", "the dependencies answer is not valid", status=answer.status) from None
                if status == "ok" and isinstance(deps, list):
                    return deps
                if status == "lease_lost":
                    raise LeaseLost()
                raise DocketError(str(status or "http_error"), "dependencies refused", status=answer.status)
            err = error_of(answer)
            if attempt < tries and retryable(err):
                if task.cancelled.wait(backoff.next(err.retry_after or 0.0)) and task.cancel_reason != "shutdown":
                    raise LeaseLost()
                continue
            raise err
        raise DocketError("http_error", "the dependencies could not be read")

    def _write_evidence(self, task: Task, kind: str, body: Any) -> None:
        assert self._evidence_pool is not None
        data = encode({"items": [{"lease": task._lease, "kind": kind, "body": body}]})
        backoff = Backoff(0.1, 2.0)
        tries = 4

        def pause(delay: float) -> None:
            # Wait for the retry, unless the task is cancelled meanwhile.
            if task.cancelled.wait(delay) and task.cancel_reason != "shutdown":
                raise LeaseLost()

        for attempt in range(1, tries + 1):
            try:
                answer = self._evidence_pool.request("POST", "/v1/worker/evidence", data)
            except DocketError:
                if attempt == tries:
                    raise
                pause(backoff.next())
                continue
            if 200 <= answer.status <= 299:
                try:
                    items = (answer.json() or {}).get("items") or [{}]
                    status = items[0].get("status") if isinstance(items[0], dict) else None
                except (ValueError, AttributeError):
                    raise DocketError("http_error", "the evidence answer is not valid", status=answer.status) from None
                if status == "ok":
                    return
                if status == "lease_lost":
                    self._leases.remove(task._lease)
                    if task._cancel("lease_lost"):
                        self._cancelled(task, "lease_lost")
                    raise LeaseLost()
                raise DocketError(str(status or "http_error"), "evidence refused", status=answer.status)
            err = error_of(answer)
            if attempt < tries and retryable(err):
                pause(backoff.next(err.retry_after or 0.0))
                continue
            raise err

    # --- shutdown -------------------------------------------------------------

    def _shutdown(self) -> None:
        slots, fin, hb = self._slots, self._finisher, self._heartbeater
        assert slots is not None and fin is not None and hb is not None
        # Running tasks drain for the grace (stop() set the deadline; a
        # failed claim loop that did not call stop() gets the full grace).
        with self._lock:
            if self._drain_deadline == float("inf"):
                self._drain_deadline = time.monotonic() + self._grace
        interrupted: KeyboardInterrupt | None = None
        try:
            drained = slots.wait_idle(lambda: self._drain_deadline, time.monotonic)
        except KeyboardInterrupt as exc:
            # A second Ctrl-C (without signal handlers) skips the rest of the
            # grace, not the release and the flush.
            drained, interrupted = False, exc
        # Cancel what is left, and hand its leases back.
        left = [t for t in self._leases.snapshot() if t._cancel("shutdown")]
        if left:
            self._log.info(
                "cancelling %d tasks at shutdown (drained=%s); releasing their leases",
                len(left),
                drained,
            )
            self._release(left)
        # Flush the outcomes (the heartbeater keeps their leases alive).
        try:
            if not fin.flush(self._flush_timeout):
                self._log.warning("outcomes not all sent within the flush timeout")
        except KeyboardInterrupt as exc:
            interrupted = interrupted or exc
        fin.stop()
        hb.stop()
        slots.close()
        if self._claim_conn is not None:
            self._claim_conn.close()
        if self._evidence_pool is not None:
            self._evidence_pool.close()
        busy = slots.size - slots.free
        if busy:
            self._log.warning(
                "%d handlers still running after shutdown (they ignore their cancellation); "
                "their results will be dropped",
                busy,
            )
        self._log.info("worker stopped: worker_id=%s %s", self.worker_id, self.stats)
        if interrupted is not None:
            raise interrupted

    def _release(self, tasks: list[Task]) -> None:
        conn = Connection(self._endpoint)
        try:
            for i in range(0, len(tasks), RELEASE_CHUNK):
                chunk = tasks[i : i + RELEASE_CHUNK]
                if self._release_chunk(conn, chunk):
                    with self._counts_lock:
                        self._counts["released"] += len(chunk)
                for t in chunk:
                    self._leases.remove(t._lease)
        finally:
            conn.close()

    def _release_chunk(self, conn: Connection, tasks: list[Task]) -> bool:
        body = encode({"leases": [t._lease for t in tasks]})
        backoff = Backoff(0.1, 2.0)
        end = time.monotonic() + min(self._flush_timeout, 10.0)
        while True:
            try:
                answer = conn.request("POST", "/v1/worker/release", body)
                if 200 <= answer.status <= 299:
                    return True
                err = error_of(answer)
                if not retryable(err):
                    self._log.error(
                        "release refused: code=%s status=%s (tasks recovered after the lease TTL)",
                        err.code,
                        err.status,
                    )
                    return False
            except DocketError as exc:
                err = exc
            delay = backoff.next(err.retry_after or 0.0)
            if time.monotonic() + delay > end:
                self._log.warning(
                    "release failed: code=%s (tasks recovered after the lease TTL)", err.code
                )
                return False
            time.sleep(delay)
