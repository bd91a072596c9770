"""A System One stub on 127.0.0.1: deterministic answers from the state, so
two runs over the same rows answer alike, with counters and faults."""

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(state, questions):
    """The wire decision the stub gives: every number derived from the state."""
    digest = hashlib.sha256(json.dumps(state, sort_keys=True).encode()).digest()
    answers = {}
    for i, (key, q) in enumerate(sorted(questions.items())):
        x = digest[i % len(digest)] / 255.0
        if q["type"] == "noul":
            answers[key] = {"type": "noul", "noul": round(x, 4)}
        elif q["type"] == "choice":
            options = list(q["criteria"])
            pick = options[digest[i] % len(options)]
            rest = (1.0 - 0.7) / max(len(options) - 1, 1) if len(options) > 1 else 0.0
            probs = {o: (0.7 if o == pick else rest) if len(options) > 1 else 1.0 for o in options}
            answers[key] = {"type": "choice", "choice": pick, "probabilities": probs, "confidence": 0.6}
        elif q["type"] == "score":
            levels = q["criteria"]
            n = len(levels)
            top = digest[i] % n
            probs = {str(j): (0.8 if j == top else 0.2 / (n - 1)) for j in range(n)}
            score = sum(j * p for j, p in ((int(k), v) for k, v in probs.items()))
            answers[key] = {
                "type": "score",
                "score": score,
                "legend": {str(j): l for j, l in enumerate(levels)},
                "probabilities": probs,
                "confidence": 0.5,
            }
    return {
        "model": "stub-1",
        "answers": answers,
        "usage": {"input_tokens": len(json.dumps(state)), "output_tokens": 3},
    }


class Stub:
    """The server: `url` is its API root (…/v1); `requests` counts calls;
    `delay_s` holds each answer; `status` answers with that HTTP status."""

    def __init__(self):
        self.requests = 0
        self.delay_s = 0.0
        self.status = 200
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with stub.lock:
                    stub.requests += 1
                if stub.delay_s:
                    time.sleep(stub.delay_s)
                if self.path != "/v1/systemone":
                    return self.reply(404, {"error": {"message": "no such path"}})
                if stub.status != 200:
                    return self.reply(stub.status, {"error": {"message": "stub failure"}})
                req = json.loads(body)
                self.reply(200, answer(req["state"], req["questions"]))

            def reply(self, status, obj):
                data = json.dumps(obj).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
