"""Exceptions of the Docket SDK.

``DocketError`` is an answer with an error status (or a failed connection);
``LeaseLost`` is a fenced worker write; ``TaskFailure`` is what a handler
raises to fail its task with a chosen code; ``TaskCancelled`` is what
``Task.raise_if_cancelled`` raises.
"""

from __future__ import annotations

__all__ = [
    "CONNECTION_ERROR",
    "DocketError",
    "LeaseLost",
    "TaskCancelled",
    "TaskFailure",
]

# CONNECTION_ERROR is the code of a DocketError raised when no answer came
# (connection refused, reset, timed out). It is the SDK's own, not one of the
# server's codes; such an error has status None.
CONNECTION_ERROR = "connection_error"


class DocketError(Exception):
    """An error answer of the server, or a call that got no answer.

    Attributes:
        code: the server's stable error code (``not_found``, ``queue_full``,
            ``submissions_paused``, ...), ``connection_error`` when no answer
            came, or ``http_error`` when the answer was not Docket's error
            envelope (a proxy page).
        message: the server's explanation, safe to show (never a payload).
        status: the HTTP status, or None when no answer came.
        retry_after: the answer's ``Retry-After`` in seconds, or None.
        trace_id: the request's trace ID in the server's logs, when known.
    """

    def __init__(
        self,
        code: str,
        message: str = "",
        *,
        status: int | None = None,
        retry_after: float | None = None,
        trace_id: str | None = None,
    ) -> None:
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.trace_id = trace_id
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "no answer"
        text = f"docket: {self.code} ({where})"
        if self.message:
            text += ": " + self.message
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
            f"retry_after={self.retry_after!r})"
        )


class LeaseLost(DocketError):
    """The task's lease is no longer current: it was cancelled, timed out,
    or recovered after missed heartbeats, or the worker is shutting down and
    handed it back. Nothing was written. The handler should return; its
    result will be dropped."""

    def __init__(self, message: str = "the task's lease is no longer current") -> None:
        super().__init__("lease_lost", message)


class TaskFailure(Exception):
    """Raise it from a handler to fail the task with a chosen code.

    ``code`` is lowercase snake case of at most 64 bytes (the server turns any
    other into ``workflow_error``). ``message`` is a short human reason that
    the task's own tenant reads in the task's ``error.message``; it is never
    logged, and it must not quote the input (at most 1,024 bytes are sent).
    A retryable failure is queued again with backoff while attempts remain;
    otherwise the task ends ``failed``.
    """

    def __init__(self, code: str, message: str = "", retryable: bool = False) -> None:
        self.code = code
        self.message = message
        self.retryable = retryable
        # The text of the exception is the code only, so that a traceback
        # printed by the caller never shows the message.
        super().__init__(code)

    def __repr__(self) -> str:
        return f"TaskFailure(code={self.code!r}, retryable={self.retryable!r})"


class TaskCancelled(Exception):
    """Raised by ``Task.raise_if_cancelled()``: the task was cancelled, timed
    out, lost its lease, or the worker is shutting down. The worker drops the
    handler's outcome; nothing is sent for it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
