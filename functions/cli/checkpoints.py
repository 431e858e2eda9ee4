"""The checkpoint commands: see what a job waiting at a human checkpoint shows, approve it (with edits for
the phase that waits) or abort it, over `/api/agent/checkpoint/{job_id}`.

research-agent checkpoint list                        (the team's waiting jobs; --json prints the API's answer)
research-agent checkpoint show JOB_ID                 (readable; --json prints the API's answer)
research-agent checkpoint approve JOB_ID --exclude cand-3 --add doi:10.1000/xyz --max-sources 8
research-agent checkpoint approve JOB_ID --drop-connector crossref --query "openalex=sparse attention"
research-agent checkpoint approve JOB_ID --strike ev-12 --not-relevant src-4
research-agent checkpoint approve JOB_ID --edits edits.json          (`-` reads the edits from stdin)
research-agent checkpoint abort JOB_ID --reason "wrong question"

Edits by phase (the API validates them, and names what it does not know): plan `--drop-connector`,
`--add-connector`, `--query CONNECTOR=QUERY` (the connector's queries become those given), `--window-years`; screening
`--exclude`, `--add` (doi:…, arxiv:…, library:…), `--max-sources`, `--chase-seed` (the candidates whose
citations the job chases); extraction `--strike` (evidence ids),
`--not-relevant` (source ids); synthesis `--strike` (claim ids), `--resynthesize`. Flags add to the
`--edits` JSON. An API error is one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO
from urllib.parse import quote

import httpx

from functions.cli.replies import send

# What names an item of a payload's list, and what says what it is, in the order they are looked for.
_ID_KEYS = ("id", "candidate_id", "source_id", "evidence_id", "claim_id", "connector", "name")
_LABEL_KEYS = ("title", "text", "quote", "statement", "claim")


class EditsError(Exception):
    """Edits that cannot be sent: an unreadable --edits file, a connector the plan does not have."""


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    checkpoint = commands.add_parser(
        "checkpoint",
        parents=[common],
        help="list, show, approve (with edits) or abort a job's human checkpoint",
    )
    actions = checkpoint.add_subparsers(dest="checkpoint_command", required=True)
    listing = actions.add_parser("list", parents=[common], help="the team's jobs waiting at a checkpoint")
    listing.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    listing.set_defaults(run=run_list)
    show = actions.add_parser("show", parents=[common], help="what the job's waiting checkpoint shows")
    show.add_argument("job_id")
    show.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    show.set_defaults(run=run_show)
    approve = actions.add_parser("approve", parents=[common], help="approve, with edits for the phase")
    approve.add_argument("job_id")
    approve.add_argument("--reason", help="recorded in the job's audit trail")
    _add_edit_options(approve)
    approve.set_defaults(run=run_approve)
    abort = actions.add_parser("abort", parents=[common], help="abort the job at its checkpoint")
    abort.add_argument("job_id")
    abort.add_argument("--reason", help="recorded in the job's audit trail")
    abort.set_defaults(run=run_abort)


def _add_edit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--edits", metavar="FILE", help="a JSON object of edits (`-`: stdin)")
    plan = parser.add_argument_group("plan")
    _repeated(plan, "--drop-connector", "CONNECTOR", "a connector the job does not query")
    _repeated(plan, "--add-connector", "CONNECTOR", "a connector the job queries besides")
    _repeated(plan, "--query", "CONNECTOR=QUERY", "the connector's queries become those given")
    plan.add_argument("--window-years", type=int, help="publication window in years")
    screening = parser.add_argument_group("screening")
    _repeated(screening, "--exclude", "CANDIDATE_ID", "a candidate not extracted")
    _repeated(screening, "--add", "doi:…|arxiv:…|library:…", "a paper extracted besides")
    screening.add_argument("--max-sources", type=int, help="how many sources are extracted")
    screening.add_argument(
        "--chase-seed",
        dest="chase_seeds",
        metavar="CANDIDATE_ID",
        action="append",
        default=[],
        help="a candidate whose citations the job chases (repeatable)",
    )
    later = parser.add_argument_group("extraction and synthesis")
    _repeated(later, "--strike", "ID", "an evidence id (extraction) or a claim id (synthesis)")
    _repeated(later, "--not-relevant", "SOURCE_ID", "a source flagged as not relevant")
    later.add_argument("--resynthesize", action="store_true", help="send the job back to synthesis")


def _repeated(group: argparse._ArgumentGroup, flag: str, metavar: str, summary: str) -> None:
    group.add_argument(flag, metavar=metavar, action="append", default=[], help=f"{summary} (repeatable)")


def _path(job_id: str, action: str = "") -> str:
    return f"/api/agent/checkpoint/{quote(job_id, safe='')}" + (f"/{action}" if action else "")


def _request(http: httpx.Client, err: TextIO, method: str, path: str, **kwargs: Any) -> Any | None:
    """The API's JSON answer; None, with the error on one line of `err`, when there is none."""
    response = send(http, err, method, path, **kwargs)
    return None if response is None else response.json()


# --- list -----------------------------------------------------------------------------------------------


def run_list(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    listed = _request(http, err, "GET", "/api/agent/checkpoints")
    if listed is None:
        return 1
    if args.json:
        out.write(json.dumps(listed, indent=2) + "\n")
        return 0
    waiting = listed.get("checkpoints") or []
    if not waiting:
        out.write("No job waits at a checkpoint\n")
    for entry in waiting:
        out.write(f"{entry['job_id']}  {entry['phase']}  since {entry.get('waiting_since') or '-'}")
        out.write(f"  {entry['goal']}\n" if entry.get("goal") else "\n")
    return 0


# --- show -----------------------------------------------------------------------------------------------


def run_show(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    checkpoint = _request(http, err, "GET", _path(args.job_id))
    if checkpoint is None:
        return 1
    if args.json:
        out.write(json.dumps(checkpoint, indent=2) + "\n")
    else:
        write_checkpoint(args.job_id, checkpoint, out)
    return 0


def write_checkpoint(job_id: str, checkpoint: dict[str, Any], out: TextIO) -> None:
    """The checkpoint for a reader: the phase, since when, then the payload, each item under its id."""
    out.write(f"Job {job_id} waits at its {checkpoint.get('phase')} checkpoint")
    out.write(f" since {checkpoint['waiting_since']}\n" if checkpoint.get("waiting_since") else "\n")
    _write_value(checkpoint.get("payload") or {}, 0, out)


def _write_value(value: Any, indent: int, out: TextIO) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, nested in value.items():
            if _scalar(nested):
                out.write(f"{pad}{_label(key)}: {_text(nested, indent)}\n")
            elif nested:
                out.write(f"{pad}{_label(key)}:\n")
                _write_value(nested, indent + 2, out)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                _write_item(item, indent, out)
            else:
                out.write(f"{pad}- {_text(item, indent)}\n")
    else:
        out.write(f"{pad}{_text(value, indent)}\n")


def _write_item(item: dict[str, Any], indent: int, out: TextIO) -> None:
    """`- [id] title`, then the item's other fields beneath it."""
    id_key = next((key for key in _ID_KEYS if _scalar(item.get(key)) and item.get(key) is not None), None)
    label_key = next((key for key in _LABEL_KEYS if isinstance(item.get(key), str)), None)
    head = f"[{item[id_key]}]" if id_key else ""
    if label_key:
        head = f"{head} {_text(item[label_key], indent + 2)}".strip()
    out.write(f"{' ' * indent}- {head}\n")
    _write_value({k: v for k, v in item.items() if k not in (id_key, label_key)}, indent + 4, out)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _label(key: str) -> str:
    return key.replace("_", " ")


def _text(value: Any, indent: int) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    text = "-" if value is None else str(value)
    return text.replace("\n", "\n" + " " * (indent + 2))  # a multi-line draft stays under its key


# --- approve and abort ------------------------------------------------------------------------------------


def run_approve(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    try:
        edits = _edits(args, http, err)
    except EditsError as exc:
        err.write(f"error: {exc}\n")
        return 1
    if edits is None:
        return 1
    body = {**edits, **({"reason": args.reason} if args.reason else {})}
    return _decide(http, out, err, _path(args.job_id, "approve"), body)


def run_abort(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    return _decide(
        http, out, err, _path(args.job_id, "abort"), {"reason": args.reason} if args.reason else {}
    )


def _decide(http: httpx.Client, out: TextIO, err: TextIO, path: str, body: dict[str, Any]) -> int:
    decided = _request(http, err, "POST", path, json=body)
    if decided is None:
        return 1
    out.write(json.dumps(decided, indent=2) + "\n")
    return 0


def _edits(args: argparse.Namespace, http: httpx.Client, err: TextIO) -> dict[str, Any] | None:
    """The edits of the --edits JSON, with the flags' added; None when the plan could not be read."""
    edits = _edits_file(args.edits) if args.edits else {}
    for key in ("exclude", "add", "strike", "not_relevant", "chase_seeds"):
        if getattr(args, key):
            edits[key] = [*(edits.get(key) or []), *getattr(args, key)]
    for value, key in (
        (args.max_sources, "max_sources"),
        (args.window_years, "publication_window_years"),
        (True if args.resynthesize else None, "resynthesize"),
    ):
        if value is not None:
            edits[key] = value
    queries = _queries(args.query)
    if queries:
        edits["queries"] = {**(edits.get("queries") or {}), **queries}
    if args.drop_connector or args.add_connector:
        checkpoint = _request(http, err, "GET", _path(args.job_id))
        if checkpoint is None:
            return None
        kept = _kept_connectors(checkpoint, edits.get("connectors"), args.drop_connector)
        edits["connectors"] = [*kept, *(name for name in args.add_connector if name not in kept)]
    return edits


def _edits_file(name: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()  # noqa: SIM115
        edits = json.loads(text)
    except OSError as exc:
        raise EditsError(f"cannot read --edits {name}: {exc.strerror}") from None
    except ValueError as exc:
        raise EditsError(f"--edits {name} is not JSON: {exc}") from None
    if not isinstance(edits, dict):
        raise EditsError(f"--edits {name} must hold a JSON object of edits")
    return edits


def _queries(values: list[str]) -> dict[str, list[str]]:
    """`--query arxiv=sparse attention --query arxiv=long context`: {"arxiv": [both]}."""
    queries: dict[str, list[str]] = {}
    for value in values:
        connector, separator, query = value.partition("=")
        if not separator or not connector.strip() or not query.strip():
            raise EditsError(f"--query takes CONNECTOR=QUERY, not {value!r}")
        queries.setdefault(connector.strip(), []).append(query.strip())
    return queries


def _kept_connectors(checkpoint: dict[str, Any], chosen: Any, dropped: list[str]) -> list[str]:
    """The connectors the plan keeps: those of `--edits` (else the checkpoint's) less the dropped."""
    if checkpoint.get("phase") != "plan":
        raise EditsError(
            f"connectors are edited at the plan checkpoint; the job waits at {checkpoint.get('phase')}"
        )
    listed = chosen if isinstance(chosen, list) else (checkpoint.get("payload") or {}).get("connectors") or []
    names = [_connector_name(entry) for entry in listed]
    unknown = [name for name in dropped if name not in names]
    if unknown:
        raise EditsError(f"the plan has no connector {', '.join(unknown)} (it has {', '.join(names)})")
    return [name for name in names if name not in dropped]


def _connector_name(entry: Any) -> str:
    """A connector of the plan's payload: its name, or an object that names it."""
    if isinstance(entry, dict):
        return str(entry.get("connector") or entry.get("name"))
    return str(entry)
