"""`research-agent`: one entry point, one module per command family (`jobs`, `ask`).

    research-agent research "What are recent advances in transformer architectures?" --depth rapid
    research-agent ask "Does sparse attention lose accuracy on long documents?" --preset fast --trace

Local by default (`make run` serves every API on http://127.0.0.1:8000); `--url` / `RESEARCH_API_URL` and
`--api-key` / `RESEARCH_API_KEY` (the API Gateway key) go before or after the command.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

import httpx

from functions.cli import ask, jobs

DEFAULT_URL = "http://127.0.0.1:8000"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="research-agent", description="Evidence-grounded research.")
    parser.add_argument("--url", default=os.environ.get("RESEARCH_API_URL", DEFAULT_URL), help="API base URL")
    parser.add_argument("--api-key", default=os.environ.get("RESEARCH_API_KEY"), help="API Gateway key")
    # The same options after the command; SUPPRESS keeps a command from resetting them to their defaults.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("--url", help="API base URL")
    common.add_argument("--api-key", help="API Gateway key")
    commands = parser.add_subparsers(dest="command", required=True)
    jobs.add_commands(commands, common)
    ask.add_commands(commands, common)
    return parser


def main(
    argv: list[str] | None = None,
    *,
    client: httpx.Client | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    args = build_parser().parse_args(argv)
    headers = {"x-api-key": args.api_key} if args.api_key else {}
    http = client or httpx.Client(base_url=args.url, headers=headers, timeout=30.0)
    try:
        code: int = args.run(args, http, out or sys.stdout, err or sys.stderr)
        return code
    finally:
        if client is None:
            http.close()


if __name__ == "__main__":
    raise SystemExit(main())
