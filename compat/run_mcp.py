"""The official Python MCP SDK (`mcp` from PyPI) against `toolnexus mcp`.

    python compat/run_mcp.py --bin target/debug/toolnexus [--model-dir DIR]

Starts `toolnexus mcp` over stdio twice, as an agent's client does:

- `tape`: --style tape over a small tape this script writes (known answers);
- `local`: --style local on the embedded model (--model-dir, else
  $TOOLNEXUS_MODEL_DIR; skipped with a note when neither is given, a failure
  when the directory holds no model).

For each it initializes, lists the tools, checks every tool's input schema
(required fields, property types), calls every tool and checks the structured
content; the guard tool answers a verdict. Each check
prints `PASS name` or `FAIL name: why`; the last line is `N passed, N failed`
and the exit status is 1 when anything failed. A whole run is bounded by
--deadline seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

STATE = "WIN A FREE CRUISE!!! Reply now with your card number."
SPAM = {"type": "noul", "instructions": "Is this unsolicited bulk mail?"}
PHISHING = {"type": "noul", "instructions": "Does it ask for credentials or card data?"}
DESKS = {
    "fraud": "someone is trying to steal money or data",
    "sales": "a real offer from a company the reader deals with",
}
LEVELS = ["harmless", "annoying", "dangerous"]

# What each tool must declare: required fields and each property's JSON type(s).
SCHEMAS: dict[str, dict[str, Any]] = {
    "noul": {
        "required": ["state", "instructions"],
        "types": {"state": ["string", "object", "array"], "instructions": "string", "criteria": "object"},
    },
    "choice": {
        "required": ["state", "instructions", "options"],
        "types": {"state": ["string", "object", "array"], "instructions": "string", "options": "object"},
    },
    "score": {
        "required": ["state", "instructions", "levels"],
        "types": {"state": ["string", "object", "array"], "instructions": "string", "levels": "array"},
    },
    "evaluate": {
        "required": ["state", "questions"],
        "types": {"state": ["string", "object", "array"], "questions": "object", "model": "string"},
    },
    "guard": {
        "required": ["tool_name", "tool_input"],
        "types": {"tool_name": "string", "tool_input": "object", "cwd": "string"},
    },
}


def write_tape(path: Path) -> None:
    """A tape under call `mcp` answering exactly the calls made below."""

    def entry(questions: dict[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
        return {
            "decision": {"answers": answers, "model": "rule-1", "usage": {"input_tokens": 10, "output_tokens": 1}},
            "model": "rule-1",
            "questions": questions,
            "state": STATE,
        }

    tape = {
        "calls": {
            "mcp": [
                entry({"answer": SPAM}, {"answer": {"type": "noul", "noul": 0.93}}),
                entry(
                    {"answer": {"type": "choice", "instructions": "Which desk owns this?", "criteria": DESKS}},
                    {
                        "answer": {
                            "type": "choice",
                            "choice": "fraud",
                            "probabilities": {"fraud": 0.9, "sales": 0.1},
                            "confidence": 0.8,
                        }
                    },
                ),
                entry(
                    {"answer": {"type": "score", "instructions": "How risky is replying?", "criteria": LEVELS}},
                    {
                        "answer": {
                            "type": "score",
                            "score": 1.8,
                            "legend": {str(i): t for i, t in enumerate(LEVELS)},
                            "probabilities": {"0": 0.05, "1": 0.1, "2": 0.85},
                            "confidence": 0.7,
                        }
                    },
                ),
                entry(
                    {"spam": SPAM, "phishing": PHISHING},
                    {"spam": {"type": "noul", "noul": 0.93}, "phishing": {"type": "noul", "noul": 0.97}},
                ),
            ]
        },
        "format": "toolnexus.tape",
        "note": "written by compat/run_mcp.py for the MCP client checks",
        "version": 1,
    }
    path.write_text(json.dumps(tape, indent=2, sort_keys=True) + "\n")


class Checks:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, why: str = "") -> None:
        if ok:
            self.passed += 1
            print(f"PASS {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}: {why}", flush=True)


def types_of(prop: dict[str, Any]) -> list[str]:
    t = prop.get("type")
    return sorted(t) if isinstance(t, list) else [t]


def probability(x: Any) -> bool:
    return isinstance(x, (int, float)) and 0.0 <= x <= 1.0


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def session_checks(c: Checks, label: str, bin_path: str, args: list[str], known: bool) -> None:
    params = StdioServerParameters(command=bin_path, args=["mcp", *args], env={"PATH": os.environ.get("PATH", "")})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            c.check(f"{label}: initialize names the server", init.server_info.name == "toolnexus", repr(init.server_info))

            listed = await session.list_tools()
            tools = {t.name: t for t in listed.tools}
            c.check(f"{label}: five tools", sorted(tools) == sorted(SCHEMAS), repr(sorted(tools)))
            for name, want in SCHEMAS.items():
                tool = tools.get(name)
                if tool is None:
                    c.check(f"{label}: {name} schema", False, "no such tool")
                    continue
                schema = tool.input_schema
                props = schema.get("properties", {})
                problems = []
                if schema.get("type") != "object":
                    problems.append(f"type {schema.get('type')!r}")
                if sorted(schema.get("required", [])) != sorted(want["required"]):
                    problems.append(f"required {schema.get('required')!r}")
                for prop, t in want["types"].items():
                    expected = sorted(t) if isinstance(t, list) else [t]
                    if prop not in props or types_of(props[prop]) != expected:
                        problems.append(f"{prop}: {props.get(prop)!r}")
                if not (tool.description or "").strip():
                    problems.append("no description")
                c.check(f"{label}: {name} schema", not problems, "; ".join(problems))
            levels = tools["score"].input_schema["properties"]["levels"] if "score" in tools else {}
            c.check(
                f"{label}: score levels are 2..10",
                levels.get("minItems") == 2 and levels.get("maxItems") == 10,
                repr(levels),
            )

            r = await session.call_tool("noul", {"state": STATE, "instructions": SPAM["instructions"]})
            a = (r.structured_content or {}).get("answers", {}).get("answer", {})
            ok = not r.is_error and a.get("type") == "noul" and probability(a.get("noul"))
            if known:
                ok = ok and a.get("noul") == 0.93 and text_of(r) == "answer: true (p=0.93)"
            c.check(f"{label}: noul", ok, f"{r.structured_content!r} {text_of(r)!r}")

            r = await session.call_tool(
                "choice", {"state": STATE, "instructions": "Which desk owns this?", "options": DESKS}
            )
            a = (r.structured_content or {}).get("answers", {}).get("answer", {})
            ok = not r.is_error and a.get("type") == "choice" and a.get("choice") in DESKS
            ok = ok and sorted(a.get("probabilities", {})) == sorted(DESKS)
            if known:
                ok = ok and a.get("choice") == "fraud"
            c.check(f"{label}: choice", ok, f"{r.structured_content!r} {text_of(r)!r}")

            r = await session.call_tool(
                "score", {"state": STATE, "instructions": "How risky is replying?", "levels": LEVELS}
            )
            a = (r.structured_content or {}).get("answers", {}).get("answer", {})
            score = a.get("score")
            ok = not r.is_error and a.get("type") == "score" and isinstance(score, (int, float))
            ok = ok and 0 <= score <= len(LEVELS) - 1
            if known:
                ok = ok and score == 1.8
            c.check(f"{label}: score", ok, f"{r.structured_content!r} {text_of(r)!r}")

            r = await session.call_tool(
                "evaluate", {"state": STATE, "questions": {"spam": SPAM, "phishing": PHISHING}}
            )
            answers = (r.structured_content or {}).get("answers", {})
            ok = not r.is_error and sorted(answers) == ["phishing", "spam"]
            ok = ok and all(probability(v.get("noul")) for v in answers.values())
            ok = ok and isinstance((r.structured_content or {}).get("model"), str)
            if known:
                ok = ok and answers["phishing"]["noul"] == 0.97
            c.check(f"{label}: evaluate", ok, f"{r.structured_content!r} {text_of(r)!r}")

            r = await session.call_tool(
                "guard", {"tool_name": "Bash", "tool_input": {"command": "rm -rf ~"}, "cwd": "/tmp"}
            )
            sc = r.structured_content or {}
            ok = not r.is_error and sc.get("verdict") == "deny" and "rule" in str(sc.get("reason"))
            c.check(f"{label}: guard (a rule denies rm -rf ~)", ok, f"{r.structured_content!r} {text_of(r)!r}")

            r = await session.call_tool("score", {"state": STATE, "instructions": "Risk?", "levels": ["one"]})
            c.check(
                f"{label}: a bad call is a tool error naming the limit",
                r.is_error and "2..=10 levels" in text_of(r),
                repr(text_of(r)),
            )
            r = await session.call_tool("noul", {"instructions": "Spam?"})
            c.check(
                f"{label}: a missing argument is a tool error naming it",
                r.is_error and '"state" is required' in text_of(r),
                repr(text_of(r)),
            )


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the toolnexus binary")
    ap.add_argument("--model-dir", default=os.environ.get("TOOLNEXUS_MODEL_DIR"), help="the embedded model")
    ap.add_argument("--deadline", type=float, default=300.0, help="seconds for the whole run")
    a = ap.parse_args()
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="toolnexus-mcp-") as tmp:
        tape = Path(tmp) / "mcp.tape.json"
        write_tape(tape)
        runs = [("tape", ["--style", "tape", "--tape", str(tape)], True)]
        if a.model_dir:
            runs.append(("local", ["--style", "local", "--model-dir", a.model_dir], False))
        else:
            print("note: no --model-dir or $TOOLNEXUS_MODEL_DIR: the local style is not checked", flush=True)
        try:
            async with asyncio.timeout(a.deadline):
                for label, args, known in runs:
                    try:
                        await session_checks(c, label, a.bin, args, known)
                    except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
                        traceback.print_exc()
                        c.check(f"{label}: session", False, f"{type(e).__name__}: {e}")
        except TimeoutError:
            c.check("the whole run within --deadline", False, f"over {a.deadline} s")
    print(f"{c.passed} passed, {c.failed} failed", flush=True)
    return 1 if c.failed or not c.passed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
