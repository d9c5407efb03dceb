"""Persistent HTTP/1.1 connections to one Docket server.

A ``Connection`` wraps one ``http.client`` connection that is kept alive
between calls; it is used by one thread at a time (each worker loop owns
one). A ``ConnectionPool`` hands idle connections to callers that share it
(the ``Client``, the handlers' evidence writes).
"""

from __future__ import annotations

import email.utils
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import CONNECTION_ERROR, DocketError

# MAX_ANSWER_BYTES bounds the answers read.
MAX_ANSWER_BYTES = 64 << 20

# Errors that mean "the kept-alive connection was closed by the server while
# idle": a request on a reused connection that fails this way, before any
# answer, is sent again once on a new connection.
_STALE = (
    http.client.RemoteDisconnected,
    http.client.BadStatusLine,
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
)


@dataclass(frozen=True)
class Answer:
    """One answer: its status, headers and body."""

    status: int
    headers: http.client.HTTPMessage
    data: bytes

    def json(self) -> Any:
        if not self.data:
            return None
        return json.loads(self.data)


class Endpoint:
    """Where and how to reach the server: the parsed base URL and the key."""

    def __init__(self, url: str, key: str, *, timeout: float, user_agent: str) -> None:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("docket: url must be http://host[:port] or https://host[:port]")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        self.timeout = timeout
        self._headers = {
            "Authorization": "Bearer " + key,
            "Accept": "application/json",
            "User-Agent": user_agent,
        }
        self._ssl = ssl.create_default_context() if parts.scheme == "https" else None

    def headers(self) -> dict[str, str]:
        return dict(self._headers)

    def new_http_connection(self) -> http.client.HTTPConnection:
        if self._ssl is not None:
            return _HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self._ssl)
        return _HTTPConnection(self.host, self.port, timeout=self.timeout)


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        # Requests are small and answered at once: do not let Nagle hold
        # them back behind a delayed ACK.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Connection:
    """One kept-alive connection. Not safe for concurrent use, except
    ``abort()``, which another thread calls to end a blocked call."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._conn: http.client.HTTPConnection | None = None
        self._used = False  # whether _conn has served an answer
        self._aborted = False
        # Guards _conn against abort(); reentrant because abort() may run in a
        # signal handler on the thread that holds it.
        self._lock = threading.RLock()

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Answer:
        """Sends one request and returns its answer, whatever its status.

        Raises DocketError(code="connection_error") when no answer came.
        """
        hdrs = self._endpoint.headers()
        if headers:
            hdrs.update(headers)
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        full = self._endpoint.base_path + path
        for attempt in (1, 2):
            conn, reused = self._connection()
            try:
                if conn.sock is None:
                    conn.connect()
                with self._lock:
                    if self._aborted:
                        raise DocketError(CONNECTION_ERROR, "the connection was closed")
                conn.sock.settimeout(timeout if timeout is not None else self._endpoint.timeout)
                conn.request(method, full, body=body, headers=hdrs)
                resp = conn.getresponse()
                data = resp.read(MAX_ANSWER_BYTES + 1)
                if len(data) > MAX_ANSWER_BYTES:
                    self.close()
                    raise DocketError(CONNECTION_ERROR, "the answer is too large")
                if resp.will_close:
                    self.close()
                else:
                    self._used = True
                return Answer(resp.status, resp.headers, data)
            except _STALE as exc:
                self.close()
                if attempt == 1 and reused and not self._aborted:
                    continue  # the server closed the idle connection: once more
                raise DocketError(CONNECTION_ERROR, type(exc).__name__) from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                what = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
                raise DocketError(CONNECTION_ERROR, what) from None
        raise AssertionError("unreachable")

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._aborted:
                raise DocketError(CONNECTION_ERROR, "the connection was closed")
            if self._conn is None:
                self._conn = self._endpoint.new_http_connection()
                self._used = False
            return self._conn, self._used

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            self._used = False
        if conn is not None:
            conn.close()

    def abort(self) -> None:
        """Ends a call blocked on this connection (from another thread) and
        refuses the next ones."""
        with self._lock:
            self._aborted = True
            conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ConnectionPool:
    """Idle connections shared by callers on several threads."""

    def __init__(self, endpoint: Endpoint, *, max_idle: int = 16) -> None:
        self._endpoint = endpoint
        self._idle: list[Connection] = []
        self._max_idle = max_idle
        self._lock = threading.Lock()
        self._closed = False

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Answer:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = Connection(self._endpoint)
        try:
            answer = conn.request(method, path, body, headers=headers, timeout=timeout)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                conn = None
        if conn is not None:
            conn.close()
        return answer

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def encode(body: Any) -> bytes:
    """Encodes a request body as compact JSON (NaN and infinities refused)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def error_of(answer: Answer) -> DocketError:
    """The DocketError of an answer with an error status."""
    retry_after = parse_retry_after(answer.headers.get("Retry-After"))
    code, message, trace_id = "http_error", answer_reason(answer.status), None
    try:
        env = json.loads(answer.data) if answer.data else None
    except ValueError:
        env = None
    if isinstance(env, dict) and isinstance(env.get("error"), dict):
        err = env["error"]
        if isinstance(err.get("code"), str) and err["code"]:
            code = err["code"]
            message = err.get("message") if isinstance(err.get("message"), str) else ""
            trace_id = err.get("trace_id") if isinstance(err.get("trace_id"), str) else None
    if not trace_id:
        trace_id = trace_id_of(answer.headers.get("traceparent"))
    return DocketError(code, message, status=answer.status, retry_after=retry_after, trace_id=trace_id)


def answer_reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def parse_retry_after(value: str | None) -> float | None:
    """A Retry-After value (delay seconds or an HTTP date) in seconds."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(int(value)), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def trace_id_of(traceparent: str | None) -> str | None:
    if not traceparent:
        return None
    parts = traceparent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32:
        return None
    return parts[1]


def retryable(err: DocketError) -> bool:
    """Whether a refusal may pass on a retry: no answer, 408, 429 or 5xx."""
    return err.status is None or err.status in (408, 429) or err.status >= 500


def check(answer: Answer) -> Any:
    """The decoded body of a 2xx answer; a DocketError for any other."""
    if not 200 <= answer.status <= 299:
        raise error_of(answer)
    try:
        return answer.json()
    except ValueError:
        raise DocketError("http_error", "the answer is not JSON", status=answer.status) from None
