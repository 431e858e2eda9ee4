"""`research-agent ask`: one question to `POST /v1/query/stream`, the answer printed as it is written.

    research-agent ask "Does sparse attention lose accuracy on long documents?" --preset fast
    research-agent ask "..." --focus-mode academic --trace      # agent trace events on stderr

The answer's verified text streams to stdout (`answer_delta` events marked `"verified": true`, each a
sentence the Verifier kept; anything else is a draft and is never printed); once the `final` event
arrives come the numbered sources, the claim verdicts, the confidence and whether the engine refused. An `error` event
or an HTTP error prints the error's message to stderr and exits 1.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from typing import Any, TextIO

import httpx

from functions.cli.sse import ServerSentEvent, iter_sse

STREAM_PATH = "/v1/query/stream"
HANDLED_EVENTS = frozenset({"answer_delta", "trace_event", "error", "final"})
SNIPPET_CHARS = 240
TRACE_PAYLOAD_CHARS = 160


class StreamFailed(Exception):
    pass


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    ask = commands.add_parser("ask", parents=[common], help="ask a question; the answer streams as written")
    ask.add_argument("question")
    ask.add_argument("--preset", help="answer preset (GET /api/v1/presets lists them)")
    ask.add_argument("--focus-mode", help="discovery focus mode (GET /api/v1/focus-modes lists them)")
    ask.add_argument("--trace", action="store_true", help="print each agent trace event to stderr")
    ask.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for the next bytes of the stream"
    )
    ask.set_defaults(run=run_ask)


def request_body(question: str, preset: str | None, focus_mode: str | None) -> dict[str, Any]:
    options = {name: value for name, value in (("preset", preset), ("focus_mode", focus_mode)) if value}
    return {"query": question, "options": options}


def run_ask(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    body = request_body(args.question, args.preset, args.focus_mode)
    try:
        with http.stream(
            "POST",
            STREAM_PATH,
            json=body,
            headers={"Accept": "text/event-stream"},
            timeout=httpx.Timeout(args.timeout, connect=10.0),
        ) as response:
            if response.status_code != 200:
                response.read()
                err.write(f"error: {http_error(response)}\n")
                return 1
            render_stream(iter_sse(response.iter_bytes()), out, err, trace=args.trace)
            return 0
    except StreamFailed as exc:
        err.write(f"error: {exc}\n")
        return 1
    except httpx.HTTPError as exc:
        err.write(f"error: {type(exc).__name__}: {exc}\n")
        return 1


def render_stream(events: Iterable[ServerSentEvent], out: TextIO, err: TextIO, *, trace: bool) -> None:
    """Print deltas as they come and the final answer's sources and verdicts; StreamFailed on an error."""
    streamed = ""
    for event in events:
        if event.event not in HANDLED_EVENTS:  # `citation` carries the citations so far; `final` has them all
            continue
        try:
            data = event.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise StreamFailed(f"the {event.event} event is not a JSON object: {event.data[:200]!r}")
        if event.event == "answer_delta":
            if data.get("verified") is not True:  # a draft: never shown as the answer
                continue
            text = str(data.get("text", ""))
            out.write(text)
            out.flush()
            streamed += text
        elif event.event == "trace_event":
            if trace:
                err.write(trace_line(data) + "\n")
                err.flush()
        elif event.event == "error":
            raise StreamFailed(error_message(data))
        elif event.event == "final":
            if not streamed and data.get("answer"):
                out.write(str(data["answer"]))
                streamed = str(data["answer"])
            if streamed and not streamed.endswith("\n"):
                out.write("\n")
            out.write(final_summary(data))
            out.flush()
            return
    raise StreamFailed("the stream ended before the final event")


def final_summary(final: dict[str, Any]) -> str:
    lines: list[str] = []
    citations = final.get("citations") or []
    if citations:
        lines += ["", "Sources:"]
        for number, citation in enumerate(citations, start=1):
            lines.append(f"  [{number}] {citation.get('title') or citation.get('source_id', '')}")
            if citation.get("url"):
                lines.append(f"      {citation['url']}")
            snippet = " ".join(str(citation.get("snippet") or "").split())
            if snippet:
                cut = snippet[:SNIPPET_CHARS] + ("…" if len(snippet) > SNIPPET_CHARS else "")
                lines.append(f"      {cut}")
    claims = final.get("claim_verifications") or []
    if claims:
        lines += ["", "Claims:"]
        rows = [
            (
                str(c.get("claim_id", "")),
                str(c.get("verdict", "")),
                _confidence(c),
                str(c.get("claim_text", "")),
            )
            for c in claims
        ]
        header = ("claim", "verdict", "conf", "text")
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
        for row in [header, *rows]:
            lines.append(
                f"  {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}".rstrip()
            )
    if final.get("refusal") and final.get("refusal_reason"):
        lines += ["", f"Refused: {final['refusal_reason']}"]
    lines.append("")
    confidence = final.get("confidence_score")
    verdict = "Refused" if final.get("refusal") else "Answered"
    summary = f"{verdict}; confidence {confidence:.2f}" if isinstance(confidence, int | float) else verdict
    if final.get("trace_id"):
        summary += f"; trace {final['trace_id']}"
    lines.append(summary)
    return "\n".join(lines) + "\n"


def _confidence(claim: dict[str, Any]) -> str:
    value = claim.get("confidence")
    return f"{value:.2f}" if isinstance(value, int | float) else "-"


def trace_line(event: dict[str, Any]) -> str:
    payload = json.dumps(event.get("payload") or {}, ensure_ascii=False, separators=(",", ":"))
    if len(payload) > TRACE_PAYLOAD_CHARS:
        payload = payload[:TRACE_PAYLOAD_CHARS] + "…"
    fields = (event.get(key) for key in ("timestamp", "agent", "event_type", "name"))
    return " ".join(["trace", *(str(value) for value in fields if value), payload])


def error_message(body: Any) -> str:
    """The message of a §8.4 error body `{"error": {"code", "message", "details"}}` (or its inner object)."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if not isinstance(error, dict):
        return str(error)
    code, text = error.get("code") or "error", error.get("message")
    message = f"{code}: {text}" if text else str(code)
    details = error.get("details")
    if isinstance(details, dict) and details:
        message += " (" + ", ".join(f"{key}={value}" for key, value in details.items()) + ")"
    return message


def http_error(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return f"HTTP {response.status_code} {error_message(body)}"
    if isinstance(body, dict) and ("message" in body or "detail" in body):  # API Gateway, FastAPI defaults
        return f"HTTP {response.status_code}: {body.get('message') or body.get('detail')}"
    return f"HTTP {response.status_code}: {response.text[:200]}"
