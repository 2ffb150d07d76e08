"""POST a JSON body to a channel's HTTP endpoint (PagerDuty, Teams, a signed webhook) with the standard
library: rate limits and server errors retried a few times (after `Retry-After`, capped), and every
failure turned into a `DeliveryError` that names the host and the problem but never the secret URL
or key, and says whether the message certainly did not arrive.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from email.message import Message
from typing import Any
from urllib.parse import urlsplit

from driftline.tasks.alerts.channels.base import DeliveryError
from driftline.tasks.alerts.messages import clip

TIMEOUT_SECONDS = 10
ATTEMPTS = 3
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_SECONDS = 5.0
BODY_LIMIT = 300


def host_of(url: str) -> str:
    """Scheme and host of a URL: safe to show even when the path or query is secret."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def url_secrets(url: str) -> tuple[str, ...]:
    """The parts of a secret URL to mask: the whole URL, and its path and query where they are long
    enough to be the secret part (a token in the path, a signature in the query)."""
    parts = urlsplit(url)
    tail = parts.path + (f"?{parts.query}" if parts.query else "")
    return (url, *(part for part in (tail, parts.query) if len(part) > 8))


def never_connected(exc: BaseException) -> bool:
    """True when the request cannot have reached the service (connection refused, unknown host)."""
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, ConnectionRefusedError | socket.gaierror)


def _retry_after(headers: Message, attempt: int) -> float:
    """Seconds to wait before the next attempt: `Retry-After` when it is a number, capped."""
    try:
        wait = float(headers.get("Retry-After") or 0.5 * 2**attempt)
    except ValueError:
        wait = 0.5 * 2**attempt
    return min(max(wait, 0.0), MAX_RETRY_AFTER_SECONDS)


def post_json(
    url: str,
    body: Mapping[str, Any],
    *,
    service: str,
    headers: Mapping[str, str] | None = None,
    sign: Callable[[bytes], Mapping[str, str]] | None = None,
    timeout: float = TIMEOUT_SECONDS,
) -> tuple[int, str]:
    """POST `body` as JSON to `url`; the status and text of a 2xx answer. `sign` adds headers computed
    from the exact bytes sent (per attempt, so a timestamp stays fresh). A 4xx other than 429 is the
    message's fault or a credential's: a `DeliveryError` with `answered` set, `affects_all` for 401,
    403 and 404 (every message would fail)."""
    data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    where = host_of(url)
    for attempt in range(ATTEMPTS):
        sent = {"Content-Type": "application/json", "User-Agent": "driftline", **(headers or {})}
        sent.update(sign(data) if sign is not None else {})
        request = urllib.request.Request(url, data=data, headers=sent, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return reply.status, reply.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            answer = clip(exc.read().decode(errors="replace").strip(), BODY_LIMIT)
            if exc.code in RETRY_STATUSES and attempt + 1 < ATTEMPTS:
                time.sleep(_retry_after(exc.headers, attempt))
                continue
            problem = f"{service} at {where} answered HTTP {exc.code}" + (f": {answer}" if answer else "")
            raise DeliveryError(
                problem, affects_all=exc.code in (401, 403, 404) or exc.code in RETRY_STATUSES, answered=True
            ) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            problem = f"cannot reach {service} at {where}: {type(exc).__name__}: {exc}"
            raise DeliveryError(problem, answered=never_connected(exc)) from None
    raise AssertionError("unreachable: the last attempt returns or raises")
