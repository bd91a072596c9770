"""The official Python SDK (typesafe-sdk 0.7.5) against `toolnexus serve`.

    python compat/run_compat.py --bin target/debug/toolnexus

Starts, on 127.0.0.1 only:

- `replay`: serve --style tape over `fixtures/sdk.tape.json` (cases.py);
- `keyed`: the same with --require-key-env;
- `small`: the same with --max-body-bytes 65536;
- `forward`: serve --style systemone in front of `upstream.py`, the stand-in
  System One API, for passthrough, assets and upstream statuses;
- `slow`: the same with --timeout-ms 500;

then drives them with the sync `TypeSafeClient` and the async
`AsyncTypeSafeClient`. Each check prints `PASS name` or `FAIL name` with the
exception it met (the SDK's own, when it raised one). The last line is
`N passed, N failed`; the exit status is 1 when anything failed. A whole run is
bounded by --deadline seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime
import json
import os
import queue
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Hermetic: nothing from the caller's environment steers the SDK.
for _k in [k for k in os.environ if k.startswith("TYPESAFE_")]:
    del os.environ[_k]

import httpx2  # noqa: E402
from cases import CALL, CASES, MODEL, case  # noqa: E402
from upstream import BOX, Upstream, answer_for  # noqa: E402

import typesafe_sdk  # noqa: E402
from typesafe_sdk import (  # noqa: E402
    AsyncTypeSafeClient,
    Box,
    Image,
    Noul,
    RetryPolicy,
    TypeSafeAPIError,
    TypeSafeAuthenticationError,
    TypeSafeBadRequestError,
    TypeSafeClient,
    TypeSafeInternalServerError,
    TypeSafeNotFoundError,
    TypeSafePermissionDeniedError,
    TypeSafeRateLimitError,
    TypeSafeUnprocessableEntityError,
)

TAPE = HERE / "fixtures" / "sdk.tape.json"
NO_RETRY = RetryPolicy(max_retries=0)
CLIENT_KEY = "sk-compat-client"
SERVE_KEY = "sk-compat-serve-key"
UPSTREAM_KEY = "sk-compat-upstream-key"
REQUEST_ID = re.compile(r"^req_[0-9a-f]{24}$")


# ---------------------------------------------------------------- servers


class Serve:
    """A `toolnexus serve` child; its first stdout line gives the address."""

    def __init__(self, binary: str, name: str, args: list[str], env: dict[str, str], logdir: Path) -> None:
        self.name = name
        self.log = logdir / f"serve-{name}.log"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("TYPESAFE_")}
        full_env.update(env)
        self.proc = subprocess.Popen(
            [binary, "serve", "--addr", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.log.open("wb"),
            env=full_env,
        )
        lines: queue.Queue[str] = queue.Queue()
        self.banner: list[str] = []

        def drain() -> None:
            assert self.proc.stdout is not None
            for raw in self.proc.stdout:
                line = raw.decode(errors="replace").rstrip("\n")
                self.banner.append(line)
                lines.put(line)

        threading.Thread(target=drain, daemon=True).start()
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"serve {name} printed nothing; log: {self.log.read_text()}") from None
        if not first.startswith("listening on http://"):
            self.stop()
            raise RuntimeError(f"serve {name}: unexpected first line {first!r}; log: {self.log.read_text()}")
        self.root = first.removeprefix("listening on ").strip()
        deadline = time.monotonic() + 5
        while len(self.banner) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


# ---------------------------------------------------------------- helpers


def tiny_png() -> bytes:
    """A valid 1x1 RGBA PNG, built here."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


PNG = tiny_png()


def canonical(value: Any) -> Any:
    """Keys sorted at every depth, as the library writes a request."""
    return json.loads(json.dumps(value, sort_keys=True))


def wire_question(q: Any) -> dict[str, Any]:
    return q if isinstance(q, dict) else q.model_dump(mode="json")


def same(got: Any, want: Any, path: str = "") -> None:
    """Deep equality, floats within 1e-9; raises naming the first difference."""
    if isinstance(want, float) or isinstance(got, float):
        if not isinstance(got, (int, float)) or abs(float(got) - float(want)) > 1e-9:
            raise AssertionError(f"{path or '.'}: got {got!r}, want {want!r}")
        return
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            raise AssertionError(f"{path or '.'}: got {got!r}, want {want!r}")
        for k in want:
            same(got[k], want[k], f"{path}.{k}")
        return
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            raise AssertionError(f"{path or '.'}: got {got!r}, want {want!r}")
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{path}[{i}]")
        return
    if got != want:
        raise AssertionError(f"{path or '.'}: got {got!r}, want {want!r}")


def as_legend_text(answer: dict[str, Any]) -> dict[str, Any]:
    """A score legend as the library keeps it: `ScoreAnswer.legend` holds
    strings (its shape is fixed), so an object or array level comes back as
    its compact JSON text. Known difference from the API, which echoes the
    level as sent."""
    if answer.get("type") == "score":
        answer = dict(answer)
        answer["legend"] = {
            k: v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), sort_keys=True)
            for k, v in answer["legend"].items()
        }
    return answer


def check_answers(result: typesafe_sdk.SystemOneResponse, questions: dict[str, Any]) -> None:
    """The SDK's typed answers equal what the stand-in upstream recorded."""
    raw = result.raw_http_response.json()
    want = {k: as_legend_text(answer_for(canonical(wire_question(q)))) for k, q in questions.items()}
    same(raw["answers"], want, "answers")
    for k, w in want.items():
        typed = result.answers[k]
        assert typed.type == w["type"], (k, typed)
        if w["type"] == "noul":
            assert result.nouls[k].noul == w["noul"]
        elif w["type"] == "choice":
            assert result.choices[k].choice == w["choice"]
            same(dict(result.choices[k].probabilities), w["probabilities"], k)
        elif w["type"] == "score":
            s = result.scores[k]
            same(s.score, w["score"], k)
            assert sorted(s.probabilities) == list(range(len(w["probabilities"]))), s.probabilities
            same({str(i): v for i, v in s.legend.items()}, w["legend"], k)
        elif w["type"] == "box":
            b = result.boxes[k]
            assert (b.box.top, b.box.bottom, b.box.left, b.box.right) == (BOX["top"], BOX["bottom"], BOX["left"], BOX["right"])
            assert b.confidence is None
    assert isinstance(result.usage.input_tokens, int) and isinstance(result.usage.output_tokens, int)
    assert REQUEST_ID.match(result.request_id), result.request_id


def expect(error: type[BaseException], call: Callable[[], Any], status: int | None = None) -> BaseException:
    """Runs `call`, which must raise exactly `error`; returns it."""
    try:
        value = call()
    except BaseException as e:  # noqa: BLE001
        if type(e) is not error:
            raise AssertionError(f"wanted {error.__name__}, got {type(e).__name__}: {e!r}") from e
        if status is not None:
            assert getattr(e, "status", None) == status, f"status {getattr(e, 'status', None)}, want {status}: {e!r}"
        if isinstance(e, TypeSafeAPIError):
            assert e.request_id is not None and REQUEST_ID.match(e.request_id), f"request_id {e.request_id!r}: {e!r}"
        return e
    raise AssertionError(f"wanted {error.__name__}, got a result: {value!r}")


async def aexpect(error: type[BaseException], call: Callable[[], Any], status: int | None = None) -> BaseException:
    try:
        value = await call()
    except BaseException as e:  # noqa: BLE001
        if type(e) is not error:
            raise AssertionError(f"wanted {error.__name__}, got {type(e).__name__}: {e!r}") from e
        if status is not None:
            assert getattr(e, "status", None) == status, f"status {getattr(e, 'status', None)}, want {status}: {e!r}"
        if isinstance(e, TypeSafeAPIError):
            assert e.request_id is not None and REQUEST_ID.match(e.request_id), f"request_id {e.request_id!r}: {e!r}"
        return e
    raise AssertionError(f"wanted {error.__name__}, got a result: {value!r}")


# ---------------------------------------------------------------- the suite


class Suite:
    def __init__(self, binary: str, logdir: Path) -> None:
        self.binary = binary
        self.logdir = logdir
        self.results: list[tuple[str, BaseException | None]] = []
        self.servers: list[Serve] = []
        self.upstream = Upstream()
        tape = ["--style", "tape", "--tape", str(TAPE), "--call", CALL]
        self.replay = self.serve("replay", tape)
        self.keyed = self.serve("keyed", [*tape, "--require-key-env", "COMPAT_SERVE_KEY"], {"COMPAT_SERVE_KEY": SERVE_KEY})
        self.small = self.serve("small", [*tape, "--max-body-bytes", "65536"])
        forward = ["--style", "systemone", "--base-url", f"{self.upstream.root}/v1", "--api-key-env", "COMPAT_UPSTREAM_KEY"]
        self.forward = self.serve("forward", forward, {"COMPAT_UPSTREAM_KEY": UPSTREAM_KEY})
        self.slow = self.serve("slow", [*forward, "--timeout-ms", "500"], {"COMPAT_UPSTREAM_KEY": UPSTREAM_KEY})

    def serve(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Serve:
        s = Serve(self.binary, name, args, env or {}, self.logdir)
        self.servers.append(s)
        return s

    def close(self) -> None:
        for s in self.servers:
            s.stop()
        self.upstream.close()

    def client(self, server: Serve, **kw: Any) -> TypeSafeClient:
        kw.setdefault("api_key", CLIENT_KEY)
        kw.setdefault("retry", NO_RETRY)
        kw.setdefault("timeout", 10.0)
        return TypeSafeClient(base_url=server.root, **kw)

    def aclient(self, server: Serve, **kw: Any) -> AsyncTypeSafeClient:
        kw.setdefault("api_key", CLIENT_KEY)
        kw.setdefault("retry", NO_RETRY)
        kw.setdefault("timeout", 10.0)
        return AsyncTypeSafeClient(base_url=server.root, **kw)

    def run(self, name: str, fn: Callable[[], Any]) -> None:
        try:
            out = fn()
            if asyncio.iscoroutine(out):
                asyncio.run(out)
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            self.results.append((name, e))
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            cause = e.__cause__ or e.__context__
            if cause is not None:
                print(f"     raised by the SDK or the check: {cause!r}", flush=True)
            print("     " + "     ".join(traceback.format_exception(e)[-3:]).rstrip(), flush=True)
        else:
            self.results.append((name, None))
            print(f"PASS {name}", flush=True)

    # ------------------------------------------------------------ checks

    def all(self) -> None:
        for c in CASES:
            self.run(f"sync {c.name}", lambda c=c: self.sync_case(c))
            self.run(f"async {c.name}", lambda c=c: self.async_case(c))
        self.run("quickstart as the SDK documents it", self.quickstart)
        self.run("banner gives the SDK base URL", self.banner)
        self.run("models.list sync", self.models_sync)
        self.run("models.list async", self.models_async)
        self.run("zstd bodies are sent and accepted", self.zstd_sent)
        self.run("a zstd bomb is a 413", self.zstd_bomb)
        self.run("a plain body over the cap is a 413", self.too_large)
        self.run("400 TypeSafeBadRequestError", self.bad_request)
        self.run("401 TypeSafeAuthenticationError with --require-key-env", self.unauthorised)
        self.run("401 async, and the right key passes", self.unauthorised_async)
        self.run("404 TypeSafeNotFoundError for a replay miss", self.not_recorded)
        self.run("404 TypeSafeNotFoundError for an unknown path", self.unknown_path)
        self.run("422 TypeSafeUnprocessableEntityError for a model", self.unknown_model)
        self.run("422 for a question that does not decode", self.bad_question)
        self.run("422 for an image the tape cannot replay", self.tape_refuses_assets)
        self.run("forward: image asset as multipart", self.forward_image)
        self.run("forward: image asset async, zstd multipart", self.forward_image_async)
        self.run("forward: JSON base64 asset and extra fields", self.forward_json_asset)
        self.run("forward: 429 TypeSafeRateLimitError with Retry-After", self.rate_limited)
        self.run("forward: 529 TypeSafeInternalServerError with Retry-After", self.overloaded)
        self.run("forward: 400/401/403/404/422/500 keep their class", self.upstream_statuses)
        self.run("forward: async 429", self.rate_limited_async)
        self.run("forward: a slow backend is a 504", self.upstream_timeout)

    def sync_case(self, c: Any) -> None:
        with self.client(self.replay) as client:
            result = client.system_one(state=c.state, questions=c.questions, **c.extra)
        check_answers(result, c.questions)
        assert result.model == f"{MODEL}-20260915", result.model

    async def async_case(self, c: Any) -> None:
        async with self.aclient(self.replay) as client:
            result = await client.system_one(state=c.state, questions=c.questions, **c.extra)
        check_answers(result, c.questions)

    def quickstart(self) -> None:
        q = case("quickstart")
        with self.client(self.replay) as client:
            result = client.system_one(state=q.state, questions=q.questions)
            assert 0 <= result.nouls["billing"].noul <= 1
            assert result.choices["tone"].choice in {"calm", "angry"}

    def banner(self) -> None:
        text = "\n".join(self.replay.banner)
        assert f'TypeSafeClient(base_url="{self.replay.root}")' in text, text
        assert f"TYPESAFE_BASE_URL={self.replay.root}" in text, text
        assert not any(SERVE_KEY in line for line in self.keyed.banner), self.keyed.banner
        assert SERVE_KEY not in (self.logdir / "serve-keyed.log").read_text()

    def _check_models(self, listed: Any) -> None:
        names = [m.name for m in listed.models]
        assert names == [MODEL, "jev-latest"], names
        today = datetime.datetime.now(datetime.timezone.utc).date()
        for m in listed.models:
            date = datetime.date.fromisoformat(m.release_date)
            assert abs((today - date).days) <= 1, m.release_date
            assert m.description, m
        assert REQUEST_ID.match(listed.request_id), listed.request_id

    def models_sync(self) -> None:
        with self.client(self.replay) as client:
            self._check_models(client.models.list())

    async def models_async(self) -> None:
        async with self.aclient(self.replay) as client:
            self._check_models(await client.models.list())

    def zstd_sent(self) -> None:
        sent: list[httpx2.Request] = []
        c = case("large-state")
        http = httpx2.Client(timeout=10.0, event_hooks={"request": [sent.append]})
        with self.client(self.replay, http_client=http, compression="zstd") as client:
            result = client.system_one(state=c.state, questions=c.questions)
        check_answers(result, c.questions)
        assert sent and sent[-1].headers.get("content-encoding") == "zstd", sent[-1].headers
        with self.client(self.replay, compression=False) as client:
            check_answers(client.system_one(state=c.state, questions=c.questions), c.questions)

    def zstd_bomb(self) -> None:
        sent: list[httpx2.Request] = []
        http = httpx2.Client(timeout=10.0, event_hooks={"request": [sent.append]})
        with self.client(self.small, http_client=http, compression="zstd") as client:
            e = expect(
                TypeSafeAPIError,
                lambda: client.system_one(state="a" * 4_000_000, questions={"q": Noul(instructions="?")}),
                413,
            )
        assert len(sent[-1].content) < 65536, len(sent[-1].content)
        assert "decoded" in str(e), e

    def too_large(self) -> None:
        with self.client(self.small, compression=False) as client:
            expect(TypeSafeAPIError, lambda: client.system_one(state="a" * 100_000, questions={"q": Noul(instructions="?")}), 413)

    def bad_request(self) -> None:
        # A body that says it is zstd but is not: the server's own 400.
        q = case("quickstart")
        with self.client(self.replay, compression=False) as client:
            e = expect(
                TypeSafeBadRequestError,
                lambda: client.system_one(state=q.state, questions=q.questions, extra_headers={"Content-Encoding": "zstd"}),
                400,
            )
        assert "not valid zstd" in str(e), e

    def unauthorised(self) -> None:
        q = case("quickstart")
        with self.client(self.keyed, api_key="sk-wrong") as client:
            e = expect(TypeSafeAuthenticationError, lambda: client.system_one(state=q.state, questions=q.questions), 401)
            expect(TypeSafeAuthenticationError, lambda: client.models.list(), 401)
        assert SERVE_KEY not in str(e) and "sk-wrong" not in str(e), e
        with self.client(self.keyed, api_key=SERVE_KEY) as client:
            check_answers(client.system_one(state=q.state, questions=q.questions), q.questions)
            assert client.models.list().models

    async def unauthorised_async(self) -> None:
        q = case("quickstart")
        async with self.aclient(self.keyed, api_key="sk-wrong") as client:
            await aexpect(TypeSafeAuthenticationError, lambda: client.system_one(state=q.state, questions=q.questions), 401)
        async with self.aclient(self.keyed, api_key=SERVE_KEY) as client:
            check_answers(await client.system_one(state=q.state, questions=q.questions), q.questions)

    def not_recorded(self) -> None:
        q = case("quickstart")
        with self.client(self.replay) as client:
            e = expect(TypeSafeNotFoundError, lambda: client.system_one(state="never recorded", questions=q.questions), 404)
        assert "no recorded decision" in str(e), e

    def unknown_path(self) -> None:
        with TypeSafeClient(base_url=self.replay.root + "/nowhere", api_key=CLIENT_KEY, retry=NO_RETRY) as client:
            expect(TypeSafeNotFoundError, lambda: client.models.list(), 404)

    def unknown_model(self) -> None:
        q = case("quickstart")
        with self.client(self.replay) as client:
            e = expect(
                TypeSafeUnprocessableEntityError,
                lambda: client.system_one(state=q.state, questions=q.questions, model="no-such-model"),
                422,
            )
            assert 'model: model "no-such-model" is not served here' in str(e), e
            # The served model by its own name works too.
            check_answers(client.system_one(state=q.state, questions=q.questions, model=MODEL), q.questions)

    def bad_question(self) -> None:
        with self.client(self.replay) as client:
            e = expect(
                TypeSafeUnprocessableEntityError,
                lambda: client.system_one(state="s", questions={"x": {"type": "vote", "instructions": "?"}}),
                422,
            )
        assert e.body["detail"][0]["loc"] == ["body", "questions", "x", "type"], e.body
        assert str(e).count("questions.x.type: ") == 1, e

    def tape_refuses_assets(self) -> None:
        photo = Image(PNG)
        with self.client(self.replay) as client:
            e = expect(
                TypeSafeUnprocessableEntityError,
                lambda: client.system_one(state={"photo": photo}, questions={"dent": Box(instructions="Where?")}),
                422,
            )
        assert "image asset" in str(e), e

    def _last_forwarded(self) -> dict[str, Any]:
        posts = [r for r in self.upstream.seen if r["method"] == "POST"]
        return posts[-1]

    def _check_forwarded_image(self, reference: str, body: dict[str, Any]) -> None:
        asset = body["assets"][reference]
        assert asset["type"] == "image" and asset["format"] == "png", asset
        assert base64.b64decode(asset["data_base64"]) == PNG

    def forward_image(self) -> None:
        photo = Image(PNG)
        questions = {"dent": Box(instructions="Where is the dent?"), "damaged": Noul(instructions=f"Is the car in {photo} damaged?")}
        with self.client(self.forward, compression=False) as client:
            result = client.system_one(state={"photo": photo, "note": "front door"}, questions=questions, model="jev-vision")
        seen = self._last_forwarded()
        body = seen["json"]
        self._check_forwarded_image(str(photo), body)
        assert body["model"] == "jev-vision", body["model"]
        assert body["state"] == {"note": "front door", "photo": str(photo)}, body["state"]
        assert seen["headers"].get("authorization") == f"Bearer {UPSTREAM_KEY}", "serve's own key goes upstream"
        assert CLIENT_KEY not in json.dumps(seen["headers"]), "the client's key is not forwarded"
        assert result.model == "jev-vision-20260915"
        assert result.boxes["dent"].box.bottom == BOX["bottom"]
        assert REQUEST_ID.match(result.request_id)
        assert result.raw_http_response.headers.get("x-upstream-request-id", "").startswith("req_upstream_")

    async def forward_image_async(self) -> None:
        photo = Image(PNG)
        sent: list[httpx2.Request] = []
        http = httpx2.AsyncClient(timeout=10.0, event_hooks={"request": [lambda r: _append(sent, r)]})
        async with self.aclient(self.forward, http_client=http, compression="zstd") as client:
            result = await client.system_one(
                state={"photo": photo, "note": "x" * 2048}, questions={"dent": Box(instructions="Where is the dent?")}
            )
        assert sent[-1].headers.get("content-encoding") == "zstd", sent[-1].headers
        assert sent[-1].headers.get("content-type", "").startswith("multipart/form-data"), sent[-1].headers
        self._check_forwarded_image(str(photo), self._last_forwarded()["json"])
        assert result.boxes["dent"].confidence is None

    def forward_json_asset(self) -> None:
        assets = {"img-1": {"type": "image", "format": "png", "data_base64": base64.b64encode(PNG).decode()}}
        with self.client(self.forward) as client:
            result = client.system_one(
                state="Product photo: img-1",
                questions={"damaged": Noul(instructions="Is the product in img-1 damaged?")},
                extra_body={"assets": assets, "priority": "low", "seed": 7},
            )
        body = self._last_forwarded()["json"]
        self._check_forwarded_image("img-1", body)
        assert body["priority"] == "low" and body["seed"] == 7, body
        assert result.nouls["damaged"].noul == 0.72

    def _posts(self) -> int:
        return sum(1 for r in self.upstream.seen if r["method"] == "POST")

    def rate_limited(self) -> None:
        before = self._posts()
        with self.client(self.forward) as client:
            e = expect(TypeSafeRateLimitError, lambda: client.system_one(state="status:429", questions={"q": Noul(instructions="?")}), 429)
        assert e.retry_after_ms == 2000, e.retry_after_ms
        assert "upstream says 429" in str(e), e
        assert self._posts() - before == 1, "serve does not retry the backend"

    def overloaded(self) -> None:
        with self.client(self.forward) as client:
            e = expect(TypeSafeInternalServerError, lambda: client.system_one(state="status:529", questions={"q": Noul(instructions="?")}), 529)
        assert e.headers.get("retry-after") == "2", e.headers
        assert "upstream says 529" in str(e), e

    def upstream_statuses(self) -> None:
        classes = {
            400: TypeSafeBadRequestError,
            401: TypeSafeAuthenticationError,
            403: TypeSafePermissionDeniedError,
            404: TypeSafeNotFoundError,
            422: TypeSafeUnprocessableEntityError,
            500: TypeSafeInternalServerError,
            503: TypeSafeInternalServerError,
        }
        with self.client(self.forward) as client:
            for status, error in classes.items():
                e = expect(error, lambda s=status: client.system_one(state=f"status:{s}", questions={"q": Noul(instructions="?")}), status)
                assert UPSTREAM_KEY not in str(e), e

    async def rate_limited_async(self) -> None:
        async with self.aclient(self.forward) as client:
            e = await aexpect(
                TypeSafeRateLimitError, lambda: client.system_one(state="status:429", questions={"q": Noul(instructions="?")}), 429
            )
        assert e.retry_after_ms == 2000, e.retry_after_ms

    def upstream_timeout(self) -> None:
        with self.client(self.slow) as client:
            expect(TypeSafeInternalServerError, lambda: client.system_one(state="sleep:2", questions={"q": Noul(instructions="?")}), 504)


async def _append(sent: list[Any], r: Any) -> None:
    sent.append(r)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(HERE.parent / "target" / "debug" / "toolnexus"))
    parser.add_argument("--deadline", type=int, default=300, help="seconds the whole run may take")
    args = parser.parse_args()

    def out_of_time(*_: object) -> None:
        raise KeyboardInterrupt(f"the suite took longer than {args.deadline}s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(args.deadline)
    print(f"typesafe-sdk {typesafe_sdk.__version__} against {args.bin}", flush=True)
    with tempfile.TemporaryDirectory(prefix="toolnexus-compat-") as tmp:
        suite = None
        try:
            suite = Suite(args.bin, Path(tmp))
            suite.all()
        except KeyboardInterrupt as e:
            print(f"FAIL run: {e}", flush=True)
            if suite is not None:
                suite.results.append(("run", e))
            else:
                print("0 passed, 1 failed")
                return 1
        except Exception as e:  # noqa: BLE001
            print(f"FAIL start-up: {type(e).__name__}: {e}", flush=True)
            print("0 passed, 1 failed")
            return 1
        finally:
            signal.alarm(0)
            if suite is not None:
                failed = [n for n, e in suite.results if e is not None]
                if failed:
                    for s in suite.servers:
                        print(f"--- serve {s.name} log (last lines)")
                        print("\n".join(s.log.read_text(errors="replace").splitlines()[-15:]))
                suite.close()
        passed = sum(1 for _, e in suite.results if e is None)
        failed_n = len(suite.results) - passed
        print(f"{passed} passed, {failed_n} failed")
        return 1 if failed_n else 0


if __name__ == "__main__":
    sys.exit(main())
