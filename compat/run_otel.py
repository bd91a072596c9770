"""The OpenTelemetry export and the Prometheus text, read by the official decoders.

    python compat/run_otel.py --bin target/debug/toolnexus

Starts, on 127.0.0.1 only:

- `upstream.py`, the System One stand-in of the compatibility suite (answers
  are a pure function of the request);
- an OTLP/HTTP receiver (http.server) that decodes every `/v1/traces` body as
  an `ExportTraceServiceRequest` and every `/v1/metrics` body as an
  `ExportMetricsServiceRequest` with the `opentelemetry-proto` package's
  generated classes, and keeps every raw byte.

Then runs the command line with `OTEL_EXPORTER_OTLP_ENDPOINT` at the receiver:
`eval` on a noul, a choice and a score (the span's GenAI attributes, one
`gen_ai.evaluation.result` event per answer with its name, score value and
label, the `toolnexus.*` extras); `eval --otel-content` (the state is
exported only then); `eval` on a failing call (`error.type`); `batch` over
three states (three spans, the request counter at 3); `guard` on a hook
input on stdin settled by a rule (one span of the guard call's own with its
`toolnexus.guard.*` verdict, rule and source), and one that reaches the judge
(the stand-in upstream as the judge, and the embedded model when
`TOOLNEXUS_MODEL_DIR` holds it: the judge's span carries the verdict); a
collector that accepts and never answers (the guard still exits within a
bound). No exported byte may hold the API key, nor the guarded command. Then
`serve` continues a caller's W3C `traceparent` (the span's trace id and
parent), and `serve --metrics` is started and `/metrics` is parsed by
`prometheus_client`'s text parser.

Each check prints `PASS name` or `FAIL name: why`; the last line is
`N passed, N failed`, and the exit status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
from upstream import Upstream  # noqa: E402

KEY = "sk-OTELCOMPAT-5f1e0c93a7d2"
STATE = "WIN A FREE CRUISE!!! Reply now with your card number."
QUESTIONS = {
    "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"},
    "desk": {
        "type": "choice",
        "instructions": "Which desk should read it?",
        "criteria": {"fraud": "someone is trying to steal money or data", "sales": "a real offer"},
    },
    "risk": {"type": "score", "instructions": "How risky is it?", "criteria": ["harmless", "annoying", "dangerous"]},
}


class Receiver:
    """An OTLP/HTTP collector on 127.0.0.1 that decodes what it is sent."""

    def __init__(self) -> None:
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.raw: list[bytes] = []
        self.types: list[str] = []
        self.errors: list[str] = []
        lock = threading.Lock()
        me = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with lock:
                    me.raw.append(body)
                    me.types.append(self.headers.get("content-type", ""))
                    try:
                        if self.path == "/v1/traces":
                            me.traces.append(ExportTraceServiceRequest.FromString(body))
                        elif self.path == "/v1/metrics":
                            me.metrics.append(ExportMetricsServiceRequest.FromString(body))
                        else:
                            me.errors.append(f"unexpected path {self.path}")
                    except Exception as e:  # noqa: BLE001
                        me.errors.append(f"{self.path}: not decodable: {e}")
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self) -> None:
        self.traces.clear()
        self.metrics.clear()
        self.raw.clear()
        self.types.clear()
        self.errors.clear()

    def spans(self) -> list[tuple[Span, dict[str, Any]]]:
        """Every span received, with its resource's attributes."""
        out = []
        for req in self.traces:
            for rs in req.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    out.extend((s, resource) for s in ss.spans)
        return out

    def metric_points(self, name: str) -> list[Any]:
        points = []
        for req in self.metrics:
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        if m.name == name:
                            data = m.sum if m.HasField("sum") else m.histogram
                            points.extend(data.data_points)
        return points


def value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


def check(cond: bool, why: str) -> None:
    if not cond:
        raise AssertionError(why)


class Suite:
    def __init__(self, binary: str, tmp: Path) -> None:
        self.binary = binary
        self.tmp = tmp
        self.upstream = Upstream()
        self.receiver = Receiver()
        self.passed = 0
        self.failed = 0
        qs = tmp / "questions.json"
        qs.write_text(json.dumps(QUESTIONS))
        self.questions = str(qs)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("OTEL_"):
                del env[k]
        env.update(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": self.receiver.root,
                "OTEL_SERVICE_NAME": "toolnexus-compat",
                "OTEL_METRIC_EXPORT_INTERVAL": "60000",
                "COMPAT_OTEL_KEY": KEY,
            }
        )
        return env

    def style(self) -> list[str]:
        return ["--style", "systemone", "--base-url", f"{self.upstream.root}/v1", "--api-key-env", "COMPAT_OTEL_KEY"]

    def cli(
        self, args: list[str], ok: bool = True, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        self.receiver.reset()
        done = subprocess.run(
            [self.binary, *args], env=env or self.env(), capture_output=True, text=True, timeout=300, check=False,
            input=stdin,
        )
        if ok and done.returncode != 0:
            raise AssertionError(f"{args[0]} exited {done.returncode}: {done.stderr.strip()}")
        check(not self.receiver.errors, f"receiver: {self.receiver.errors}")
        check(
            all(t == "application/x-protobuf" for t in self.receiver.types),
            f"content types {self.receiver.types}",
        )
        for body in self.receiver.raw:
            check(KEY.encode() not in body, "the API key was exported")
        return done

    def run(self, name: str, fn: Callable[[], None]) -> None:
        try:
            fn()
            self.passed += 1
            print(f"PASS {name}", flush=True)
        except Exception as e:  # noqa: BLE001
            self.failed += 1
            print(f"FAIL {name}: {e}", flush=True)
            traceback.print_exc(file=sys.stderr)

    # -- the checks --------------------------------------------------------

    def eval_span(self) -> None:
        self.cli(["eval", "--questions", self.questions, "--state", json.dumps(STATE), *self.style(), "--json"])
        spans = self.receiver.spans()
        check(len(spans) == 1, f"one span per call, got {len(spans)}")
        span, resource = spans[0]
        check(resource.get("service.name") == "toolnexus-compat", f"service.name {resource.get('service.name')}")
        check(span.kind == Span.SPAN_KIND_CLIENT, f"kind {span.kind}")
        a = attrs(span.attributes)
        want = {
            "gen_ai.operation.name": "evaluate",
            "gen_ai.provider.name": "systemone",
            "gen_ai.request.model": "jev-latest",
            "gen_ai.response.model": "jev-latest-20260915",
            "server.address": "127.0.0.1",
            "toolnexus.cache_hit": False,
            "gen_ai.usage.output_tokens": 3,
        }
        for k, v in want.items():
            check(a.get(k) == v, f"{k} = {a.get(k)!r}, want {v!r}")
        check(a.get("gen_ai.usage.input_tokens", 0) > 0, "input tokens")
        check("error.type" not in a, "no error.type on a success")
        check("toolnexus.state" not in a, "no state without --otel-content")
        check(span.end_time_unix_nano >= span.start_time_unix_nano > 0, "times")

        events = {attrs(e.attributes)["gen_ai.evaluation.name"]: (e, attrs(e.attributes)) for e in span.events}
        check(sorted(events) == ["desk", "risk", "spam"], f"events for {sorted(events)}")
        check(all(e.name == "gen_ai.evaluation.result" for e, _ in events.values()), "event names")
        noul = events["spam"][1]
        check(noul["gen_ai.evaluation.score.value"] == 0.72, f"noul value {noul}")
        check(noul["gen_ai.evaluation.score.label"] == "true", f"noul label {noul}")
        choice = events["desk"][1]
        check(choice["gen_ai.evaluation.score.label"] == "fraud", f"choice label {choice}")
        check(choice["gen_ai.evaluation.score.value"] == 0.7, f"choice value {choice}")
        check(choice["toolnexus.labels"] == ["fraud", "sales"], f"choice labels {choice}")
        check(choice["toolnexus.probabilities"] == [0.7, 0.3], f"choice probabilities {choice}")
        check(isinstance(choice["toolnexus.near_uniform"], bool), "near_uniform")
        check("toolnexus.confidence" in choice, "confidence")
        score = events["risk"][1]
        check(abs(score["gen_ai.evaluation.score.value"] - 1.0) < 1e-9, f"score value {score}")
        check(score["gen_ai.evaluation.score.label"] == "1", f"score label {score}")
        check(score["toolnexus.answer_type"] == "score", "answer type")
        check(all("toolnexus.instructions" not in ev for _, ev in events.values()), "no instructions")

        points = self.receiver.metric_points("toolnexus.requests")
        check(sum(p.as_int for p in points) == 1, f"toolnexus.requests {points}")
        answers = self.receiver.metric_points("toolnexus.answers")
        by_type = {attrs(p.attributes)["type"]: p.as_int for p in answers}
        check(by_type == {"choice": 1, "noul": 1, "score": 1}, f"answers {by_type}")
        duration = self.receiver.metric_points("toolnexus.request.duration")
        check(len(duration) == 1 and duration[0].count == 1, "one latency sample")

    def content_opt_in(self) -> None:
        self.cli(
            ["eval", "--questions", self.questions, "--state", json.dumps(STATE), *self.style(), "--otel-content"]
        )
        (span, _), *_ = self.receiver.spans()
        a = attrs(span.attributes)
        check(a.get("toolnexus.state") == json.dumps(STATE, ensure_ascii=False), f"state {a.get('toolnexus.state')!r}")
        ev = {attrs(e.attributes)["gen_ai.evaluation.name"]: attrs(e.attributes) for e in span.events}
        check(ev["spam"].get("toolnexus.instructions") == "Is this unsolicited bulk mail?", "instructions")

    def failure(self) -> None:
        self.cli(
            ["eval", "--questions", self.questions, "--state", json.dumps("status:400"), *self.style()], ok=False
        )
        spans = self.receiver.spans()
        check(len(spans) == 1, f"one span, got {len(spans)}")
        a = attrs(spans[0][0].attributes)
        check(a.get("error.type") == "http", f"error.type {a.get('error.type')!r}")
        check(spans[0][0].status.code == 2, "status error")
        check(not spans[0][0].events, "no answers, no events")
        errors = self.receiver.metric_points("toolnexus.errors")
        check([attrs(p.attributes).get("kind") for p in errors] == ["http"], "errors by kind")

    def batch(self) -> None:
        states = self.tmp / "states.jsonl"
        states.write_text("".join(json.dumps(s) + "\n" for s in ["one", "two", "three"]))
        out = self.tmp / "out.jsonl"
        out.unlink(missing_ok=True)
        self.cli(
            ["batch", "--questions", self.questions, "--states", str(states), "--out", str(out), "--no-progress",
             *self.style()]
        )
        spans = self.receiver.spans()
        check(len(spans) == 3, f"three spans, got {len(spans)}")
        check(all(len(s.events) == 3 for s, _ in spans), "three events each")
        points = self.receiver.metric_points("toolnexus.requests")
        check(sum(p.as_int for p in points) == 3, "three requests counted")

    def dead_collector(self) -> None:
        port = free_port()
        env = self.env()
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
        started = time.monotonic()
        done = subprocess.run(
            [self.binary, "eval", "--questions", self.questions, "--state", json.dumps(STATE), *self.style()],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )
        took = time.monotonic() - started
        check(done.returncode == 0, f"exit {done.returncode}: {done.stderr}")
        check("otel: the collector at" in done.stderr, f"a warning: {done.stderr!r}")
        check(KEY not in done.stderr, "no key in the warning")
        check(took < 30, f"took {took:.1f}s")

    # -- the guard -----------------------------------------------------------

    def guard_env(self) -> dict[str, str]:
        env = self.env()
        env["HOME"] = str(self.tmp)
        env["XDG_STATE_HOME"] = str(self.tmp / "state")
        return env

    def hook(self, command: str) -> str:
        return json.dumps(
            {
                "session_id": "s-otel",
                "cwd": str(self.tmp),
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": command},
                "tool_use_id": "toolu_otel",
            }
        )

    def guard_verdict(self, a: dict[str, Any], verdict: str, decided_by: str, asked: bool) -> None:
        check(a.get("toolnexus.guard.verdict") == verdict, f"verdict {a.get('toolnexus.guard.verdict')!r}")
        check(a.get("toolnexus.guard.decided_by") == decided_by, f"decided_by {a.get('toolnexus.guard.decided_by')!r}")
        check(a.get("toolnexus.guard.judge_asked") is asked, f"judge_asked {a.get('toolnexus.guard.judge_asked')!r}")
        check(a.get("toolnexus.guard.tool") == "Bash", f"tool {a.get('toolnexus.guard.tool')!r}")

    def guard_rule(self) -> None:
        command = "git push --force origin main"
        done = self.cli(["guard"], stdin=self.hook(command), env=self.guard_env())
        answer = json.loads(done.stdout)["hookSpecificOutput"]
        check(answer["permissionDecision"] == "deny", f"answer {answer}")
        spans = self.receiver.spans()
        check(len(spans) == 1, f"one span for the guard call, got {len(spans)}")
        span, _ = spans[0]
        check(span.name == "guard Bash", f"name {span.name!r}")
        check(span.kind == Span.SPAN_KIND_INTERNAL, f"kind {span.kind}")
        a = attrs(span.attributes)
        self.guard_verdict(a, "deny", "rule", False)
        check(a.get("toolnexus.guard.rule") == "force-push", f"rule {a.get('toolnexus.guard.rule')!r}")
        check("gen_ai.operation.name" not in a, "no judge was asked")
        check(all(b"push --force" not in body for body in self.receiver.raw), "the command is not exported")

    def guard_judge(self, args: list[str], command: str) -> tuple[str, str]:
        done = self.cli(["guard", *args], stdin=self.hook(command), env=self.guard_env())
        printed = done.stdout.strip()
        verdict = json.loads(printed)["hookSpecificOutput"]["permissionDecision"] if printed else "allow"
        spans = self.receiver.spans()
        check(len(spans) >= 1, "the judge's span")
        for span, _ in spans:
            a = attrs(span.attributes)
            check(a.get("gen_ai.operation.name") == "evaluate", f"a judge span: {span.name!r}")
            self.guard_verdict(a, verdict, "judge", True)
            check("toolnexus.guard.rule" not in a, "no rule decided")
        check(all(b"JUDGED-DIR" not in body for body in self.receiver.raw), "the command is not exported")
        reason = json.loads(printed)["hookSpecificOutput"]["permissionDecisionReason"] if printed else ""
        return verdict, reason

    def guard_stand_in_judge(self) -> None:
        self.guard_judge(self.style(), "ls -la JUDGED-DIR")

    def guard_model_judge(self) -> None:
        model = os.environ.get("TOOLNEXUS_MODEL_DIR", "")
        if not (model and (Path(model) / "model.safetensors").is_file()):
            check(os.environ.get("TOOLNEXUS_REQUIRE_MODEL") != "1", f"no embedded model at {model!r}")
            print("SKIP the embedded model's judge: TOOLNEXUS_MODEL_DIR holds no model", flush=True)
            return
        # The built-in policy with a budget a loaded CI machine's cold model
        # load fits in: over budget, the guard answers on_error without the
        # judge's span (a span of its own, `decided_by` error).
        builtin = subprocess.run(
            [self.binary, "guard", "check-policy"], capture_output=True, text=True, timeout=60, check=True
        )
        policy = json.loads(builtin.stdout)
        policy["budget_ms"] = 240_000
        policy["log"]["path"] = str(self.tmp / "state" / "guard-model.jsonl")
        path = self.tmp / "guard-policy.json"
        path.write_text(json.dumps(policy))
        self.guard_judge(["--policy", str(path)], "ls -la JUDGED-DIR")

    def guard_black_hole(self) -> None:
        hole = socket.socket()
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        held: list[socket.socket] = []

        def accept() -> None:
            while True:
                try:
                    held.append(hole.accept()[0])
                except OSError:
                    return

        threading.Thread(target=accept, daemon=True).start()
        env = self.guard_env()
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{hole.getsockname()[1]}"
        started = time.monotonic()
        try:
            done = subprocess.run(
                [self.binary, "guard"], env=env, input=self.hook("git push --force origin main"),
                capture_output=True, text=True, timeout=120, check=False,
            )
        finally:
            took = time.monotonic() - started
            hole.close()
            for c in held:
                c.close()
        check(done.returncode == 0, f"exit {done.returncode}: {done.stderr}")
        check(json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny", done.stdout)
        check("did not answer within 200 ms" in done.stderr, f"a warning: {done.stderr!r}")
        # A hang guard, not a speed claim: the SDK alone would wait 10 s.
        check(took < 5, f"took {took:.1f}s")

    def serve_traceparent(self) -> None:
        port = free_port()
        self.receiver.reset()
        serve = subprocess.Popen(
            [self.binary, "serve", "--addr", f"127.0.0.1:{port}", *self.style()],
            env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
        try:
            root = f"http://127.0.0.1:{port}"
            wait_for(f"{root}/v1/models")
            body = json.dumps({"state": STATE, "questions": QUESTIONS}).encode()
            for header in [f"00-{trace}-{parent}-01", None]:
                headers = {"content-type": "application/json"}
                if header:
                    headers["traceparent"] = header
                req = urllib.request.Request(f"{root}/v1/systemone", data=body, headers=headers)
                urllib.request.urlopen(req, timeout=30).read()
        finally:
            serve.terminate()
            serve.wait(timeout=30)
        spans = [s for s, _ in self.receiver.spans()]
        check(len(spans) == 2, f"a span per request, got {len(spans)}")
        continued = [s for s in spans if s.trace_id.hex() == trace]
        check(len(continued) == 1, f"trace ids {[s.trace_id.hex() for s in spans]}")
        check(continued[0].parent_span_id.hex() == parent, f"parent {continued[0].parent_span_id.hex()}")
        check(continued[0].kind == Span.SPAN_KIND_CLIENT, "still the GenAI client span")
        own = [s for s in spans if s.trace_id.hex() != trace]
        check(own and not own[0].parent_span_id, "without the header: a root span")

    def prometheus(self) -> None:
        port = free_port()
        env = self.env()
        del env["OTEL_EXPORTER_OTLP_ENDPOINT"]
        serve = subprocess.Popen(
            [self.binary, "serve", "--metrics", "--addr", f"127.0.0.1:{port}", *self.style()],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        try:
            root = f"http://127.0.0.1:{port}"
            wait_for(f"{root}/v1/models")
            body = json.dumps({"state": STATE, "questions": QUESTIONS}).encode()
            for _ in range(2):
                req = urllib.request.Request(
                    f"{root}/v1/systemone", data=body, headers={"content-type": "application/json"}
                )
                urllib.request.urlopen(req, timeout=30).read()
            with urllib.request.urlopen(f"{root}/metrics", timeout=30) as r:
                ctype = r.headers.get("content-type", "")
                text = r.read().decode()
            check(ctype.startswith("text/plain"), f"content type {ctype}")
            families = {f.name: f for f in text_string_to_metric_families(text)}
            # prometheus_client names a counter's family without `_total`.
            for name in ["toolnexus_requests", "toolnexus_answers", "toolnexus_errors", "toolnexus_cache_hits",
                         "toolnexus_tokens", "toolnexus_cost_usd", "toolnexus_request_duration_seconds"]:
                check(name in families, f"{name} in {sorted(families)}")
            requests = [s for s in families["toolnexus_requests"].samples if s.name == "toolnexus_requests_total"]
            check(sum(s.value for s in requests) == 2, f"requests {requests}")
            check(all(set(s.labels) == {"style", "model", "outcome"} for s in requests), "request labels")
            answers = {s.labels["type"]: s.value for s in families["toolnexus_answers"].samples
                       if s.name == "toolnexus_answers_total"}
            check(answers == {"choice": 2.0, "noul": 2.0, "score": 2.0}, f"answers {answers}")
            count = [s.value for s in families["toolnexus_request_duration_seconds"].samples
                     if s.name == "toolnexus_request_duration_seconds_count"]
            check(count == [2.0], f"latency count {count}")
            check(KEY not in text, "no key in /metrics")
        finally:
            serve.terminate()
            serve.wait(timeout=30)

    def all(self) -> None:
        self.run("eval: one GenAI client span, an evaluation event per answer, metrics", self.eval_span)
        self.run("eval --otel-content: state and instructions only then", self.content_opt_in)
        self.run("eval on a failing call: error.type and no events", self.failure)
        self.run("batch: a span per state", self.batch)
        self.run("an unreachable collector: a warning, the call succeeds", self.dead_collector)
        self.run("guard settled by a rule: a span of its own with the verdict and rule", self.guard_rule)
        self.run("guard asking the stand-in judge: the judge's span carries the verdict", self.guard_stand_in_judge)
        self.run("guard asking the embedded model: the judge's span carries the verdict", self.guard_model_judge)
        self.run("guard with a collector that never answers: a bounded exit", self.guard_black_hole)
        self.run("serve continues a caller's traceparent", self.serve_traceparent)
        self.run("serve --metrics: /metrics read by prometheus_client", self.prometheus)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except Exception:  # noqa: BLE001
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True, help="the toolnexus binary")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suite = Suite(args.bin, Path(tmp))
        try:
            suite.all()
        finally:
            suite.upstream.close()
            suite.receiver.server.shutdown()
    print(f"{suite.passed} passed, {suite.failed} failed", flush=True)
    return 1 if suite.failed else 0


if __name__ == "__main__":
    sys.exit(main())
