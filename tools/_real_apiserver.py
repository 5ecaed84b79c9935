"""A client of the real kube-apiserver the recording tools record from (not a test dependency).

Defaults to the 1.20.2 server of this project's machines (https://127.0.0.1:16443, bearer
token ``kcm-bench-token``, its certificate not checked); ``OWNERGC_REAL_APISERVER`` and
``OWNERGC_REAL_TOKEN`` name another.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import urllib.error
import urllib.request
from typing import Any

BASE = os.environ.get("OWNERGC_REAL_APISERVER", "https://127.0.0.1:16443")
TOKEN = os.environ.get("OWNERGC_REAL_TOKEN", "kcm-bench-token")
_CONTEXT = ssl._create_unverified_context()  # (a local test server's own CA)


def call(
    method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int | None, Any]:
    """One request: its status and decoded JSON answer. ``body`` is sent as it is when a
    string (a malformed one on purpose), else as JSON. A connection the server closed
    without an answer (it panicked) is ``(None, None)``."""
    data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
    request = urllib.request.Request(
        BASE + path,
        data=None if data is None else data.encode(),
        method=method,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type},
    )
    try:
        with urllib.request.urlopen(request, context=_CONTEXT) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
    except http.client.RemoteDisconnected:
        return None, None
