"""A tiny System One API on 127.0.0.1, for the compatibility suite.

It stands in for the backend behind `toolnexus serve --style systemone` (and
answers `toolnexus tape record` when the fixtures are made). Standard library
only. Answers are a pure function of the request, so a test can compute what
it expects:

- every question gets an answer of its own type (`answer_for`);
- a string state `status:NNN` is answered with that HTTP status and
  `{"detail": {"message": "upstream says NNN"}}` (429 and 529 add
  `Retry-After: 2`);
- a string state `sleep:S` waits S seconds first.

Every request is kept in `Upstream.seen` (method, path, headers, JSON body).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BOX = {"top": 0.2, "bottom": 0.66, "left": 0.19, "right": 0.68}


def answer_for(question: dict[str, Any]) -> dict[str, Any]:
    """The answer the upstream gives to one wire question."""
    kind = question.get("type")
    if kind == "noul":
        return {"type": "noul", "noul": 0.72}
    if kind == "choice":
        options = list(question["criteria"])
        rest = round(0.3 / (len(options) - 1), 6) if len(options) > 1 else 0.0
        probabilities = {o: (0.7 if i == 0 else rest) for i, o in enumerate(options)}
        if len(options) == 1:
            probabilities = {options[0]: 1.0}
        return {
            "type": "choice",
            "choice": options[0],
            "confidence": probabilities[options[0]],
            "probabilities": probabilities,
        }
    if kind == "score":
        levels = question["criteria"]
        n = len(levels)
        top = min(1, n - 1)
        rest = round(0.4 / (n - 1), 6) if n > 1 else 0.0
        probabilities = {str(i): (0.6 if i == top else rest) for i in range(n)}
        if n == 1:
            probabilities = {"0": 1.0}
        score = sum(i * p for i, p in enumerate(probabilities.values()))
        return {
            "type": "score",
            "score": round(score, 6),
            "confidence": probabilities[str(top)],
            "legend": {str(i): level for i, level in enumerate(levels)},
            "probabilities": probabilities,
        }
    if kind == "box":
        return {"type": "box", "box": dict(BOX), "confidence": None}
    return {"type": kind}


def decision_for(request: dict[str, Any], body_bytes: int) -> dict[str, Any]:
    """The whole response the upstream gives to a well-formed request."""
    return {
        "model": f"{request.get('model') or 'unnamed'}-20260915",
        "answers": {k: answer_for(q) for k, q in request["questions"].items()},
        "usage": {"input_tokens": max(1, body_bytes // 4), "output_tokens": len(request["questions"])},
    }


class Upstream:
    """The server, on 127.0.0.1 at a free port, in a daemon thread."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self._count = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                with outer._lock:
                    outer._count += 1
                    rid = f"req_upstream_{outer._count}"
                self.send_header("x-typesafe-request-id", rid)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._record(None)
                if self.path == "/v1/models":
                    self._send(200, {"models": [{"name": "jev-latest", "description": "compat upstream", "release_date": "2026-09-15"}]})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    request = json.loads(raw)
                except ValueError:
                    self._record(None)
                    self._send(400, {"detail": {"message": "upstream: body is not JSON"}})
                    return
                self._record(request)
                if self.path != "/v1/systemone":
                    self._send(404, {"detail": "Not Found"})
                    return
                state = request.get("state")
                if isinstance(state, str) and state.startswith("sleep:"):
                    time.sleep(float(state.split(":", 1)[1]))
                if isinstance(state, str) and state.startswith("status:"):
                    status = int(state.split(":", 1)[1])
                    headers = {"Retry-After": "2"} if status in (429, 529) else {}
                    self._send(status, {"detail": {"message": f"upstream says {status}"}}, headers)
                    return
                self._send(200, decision_for(request, len(raw)))

            def _record(self, body: Any) -> None:
                with outer._lock:
                    outer.seen.append(
                        {
                            "method": self.command,
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "json": body,
                        }
                    )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.root = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "Upstream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
