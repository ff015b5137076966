"""What an S3 error answer means: its code, HTTP status and a readable reason, whether botocore
already retried it, and whether sending it again may succeed (throttling, 5xx, a dropped
connection), for the retries of timeline/storage/s3.py."""

from __future__ import annotations

# Error codes S3 (or an S3-compatible store) gives for a key it may delete on a later try.
TRANSIENT_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                             "TooManyRequests", "RequestTimeout", "InternalError", "ServiceUnavailable",
                             "503", "500"})


def transient(exc: Exception) -> bool:
    """Whether a failed request may succeed if sent again: throttling, 5xx, a dropped, reset or
    timed-out connection."""
    from botocore.exceptions import ConnectionError as BotoConnectionError
    from botocore.exceptions import HTTPClientError

    if isinstance(exc, (BotoConnectionError, HTTPClientError)):
        return True
    status = status_of(exc)
    return code_of(exc) in TRANSIENT_CODES or status == 429 or status >= 500


def retried(exc: Exception) -> bool:
    """Whether botocore sent the request more than once before this answer."""
    response = getattr(exc, "response", None) or {}
    return int((response.get("ResponseMetadata") or {}).get("RetryAttempts") or 0) > 0


def code_of(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str((response.get("Error") or {}).get("Code") or "")


def status_of(exc: Exception) -> int:
    response = getattr(exc, "response", None) or {}
    return int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)


def reason_of(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if response:
        error = response.get("Error") or {}
        code, message = error.get("Code") or "", error.get("Message") or ""
        return f"{code}: {message}" if code and message else (code or message or str(exc))
    return str(exc) or type(exc).__name__
