"""POST one body to one webhook URL (http or https), with no redirects followed and no proxy.

The answer is ``(status, None)`` when the receiver answered (any status), ``(None, error)`` when it
could not be reached or did not answer within ``timeout``; it never raises for a network failure.
"""

from __future__ import annotations

import http.client
import ssl
from urllib.parse import urlsplit

#: What a receiver's answer may hold that is read (and discarded): the rest is not waited for.
_MAX_ANSWER_BYTES = 65_536


def post(url: str, headers: dict[str, str], body: bytes, timeout: float) -> tuple[int | None, str | None]:
    """POST ``body`` to ``url`` with ``headers``; the status, or None and why not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None, "not an http(s) URL"
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request("POST", target, body=body, headers={**headers, "Content-Length": str(len(body))})
        response = connection.getresponse()
        response.read(_MAX_ANSWER_BYTES)
        return response.status, None
    except (OSError, http.client.HTTPException) as error:
        return None, f"{type(error).__name__}: {error}"[:300]
    finally:
        connection.close()
