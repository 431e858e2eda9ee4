"""`research-agent`: one entry point, one module per command family (`jobs`, `checkpoints`, `ask`,
`admin`).

    research-agent research "What are recent advances in transformer architectures?" --depth rapid
    research-agent checkpoint approve JOB_ID --exclude cand-3 --add doi:10.1000/xyz
    research-agent ask "Does sparse attention lose accuracy on long documents?" --preset fast --trace
    research-agent admin create-team "Platform research" --tier standard

Local by default (`make run` serves every API on http://127.0.0.1:8000); `--url` / `RESEARCH_API_URL`,
`--api-key` / `RESEARCH_API_KEY` (the API Gateway key) and `--token` / `RESEARCH_API_TOKEN` (a team's
bearer token, sent as `Authorization: Bearer`) go before or after the command.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

import httpx

from functions.cli import admin, ask, checkpoints, jobs

DEFAULT_URL = "http://127.0.0.1:8000"
BEARER_HELP = "a team's bearer token, sent as Authorization: Bearer (default: $RESEARCH_API_TOKEN)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="research-agent", description="Evidence-grounded research.")
    parser.add_argument("--url", default=os.environ.get("RESEARCH_API_URL", DEFAULT_URL), help="API base URL")
    parser.add_argument("--api-key", default=os.environ.get("RESEARCH_API_KEY"), help="API Gateway key")
    parser.add_argument("--token", default=os.environ.get("RESEARCH_API_TOKEN"), help=BEARER_HELP)
    # The same options after the command; SUPPRESS keeps a command from resetting them to their defaults.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--url", help="API base URL")
    common.add_argument("--api-key", help="API Gateway key")
    common.add_argument("--token", help=BEARER_HELP)
    commands = parser.add_subparsers(dest="command", required=True)
    jobs.add_commands(commands, common)
    checkpoints.add_commands(commands, common)
    ask.add_commands(commands, common)
    admin.add_commands(commands, common)
    return parser


def request_headers(args: argparse.Namespace) -> dict[str, str]:
    """What every request of every command carries: the API key and the team's bearer token."""
    headers = {"x-api-key": args.api_key} if args.api_key else {}
    if args.token:
        headers["Authorization"] = f"Bearer {args.token}"
    return headers


def main(
    argv: list[str] | None = None,
    *,
    client: httpx.Client | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    args = build_parser().parse_args(argv)
    headers = request_headers(args)
    http = client or httpx.Client(base_url=args.url, headers=headers, timeout=30.0)
    try:
        code: int = args.run(args, http, out or sys.stdout, err or sys.stderr)
        return code
    finally:
        if client is None:
            http.close()


if __name__ == "__main__":
    raise SystemExit(main())
