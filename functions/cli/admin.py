"""The admin commands: teams and their bearer tokens, over the admin routes (`/admin/teams...`).

research-agent admin create-team "Platform research" --tier standard
research-agent admin issue-token team-0123456789ab
research-agent admin revoke-token team-0123456789ab tok-0123456789ab
research-agent admin set-budget team-0123456789ab 250      (USD a month; `none` removes it)
research-agent admin webhook-secret team-0123456789ab

The admin credential comes from `--admin-token` or ADMIN_TOKEN and is sent as `Authorization: Bearer`
(on AWS the admin routes are IAM-authorised instead). A new token is printed once, as JSON on stdout:
the API keeps only its hash.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable
from typing import Any, TextIO
from urllib.parse import quote

import httpx

from functions.cli.replies import send
from functions.teams.models import TIERS


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    admin = commands.add_parser("admin", parents=[common], help="manage teams and their tokens")
    credential = argparse.ArgumentParser(add_help=False)
    credential.add_argument(
        "--admin-token",
        default=os.environ.get("ADMIN_TOKEN"),
        help="the admin credential (default: $ADMIN_TOKEN)",
    )
    actions = admin.add_subparsers(dest="admin_command", required=True)

    def action(name: str, run: Callable[..., int], summary: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, parents=[common, credential], help=summary)
        parser.set_defaults(run=run)
        return parser

    create = action("create-team", run_create_team, "create a team; prints its id and first token")
    create.add_argument("name", help="the team's display name")
    create.add_argument("--tier", choices=TIERS, required=True, help="usage tier")
    issue = action("issue-token", run_issue_token, "issue a new token of a team; prints it once")
    issue.add_argument("team_id")
    revoke = action("revoke-token", run_revoke_token, "revoke a team's token")
    revoke.add_argument("team_id")
    revoke.add_argument("token_id")
    budget = action(
        "set-budget",
        run_set_budget,
        "set a team's monthly budget in USD (`none` removes it); prints the team",
    )
    budget.add_argument("team_id")
    budget.add_argument("usd", type=_budget, help="USD a month, or `none`")
    secret = action(
        "webhook-secret",
        run_webhook_secret,
        "create or rotate a team's webhook signing secret; prints it once",
    )
    secret.add_argument("team_id")


def _send(
    args: argparse.Namespace, http: httpx.Client, err: TextIO, method: str, path: str, **kwargs: Any
) -> httpx.Response | None:
    if not args.admin_token:
        err.write("error: an admin token is required (--admin-token or ADMIN_TOKEN)\n")
        return None
    return send(http, err, method, path, headers={"Authorization": f"Bearer {args.admin_token}"}, **kwargs)


def _print_json(response: httpx.Response, out: TextIO) -> int:
    out.write(json.dumps(response.json(), indent=2) + "\n")
    return 0


def run_create_team(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    response = _send(args, http, err, "POST", "/admin/teams", json={"name": args.name, "tier": args.tier})
    return 1 if response is None else _print_json(response, out)


def run_issue_token(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    response = _send(args, http, err, "POST", f"/admin/teams/{_segment(args.team_id)}/tokens")
    return 1 if response is None else _print_json(response, out)


def run_revoke_token(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    path = f"/admin/teams/{_segment(args.team_id)}/tokens/{_segment(args.token_id)}"
    response = _send(args, http, err, "DELETE", path)
    if response is None:
        return 1
    out.write(f"revoked {args.token_id} of {args.team_id}\n")
    return 0


def _budget(value: str) -> float | None:
    """The `usd` argument of set-budget: a number >= 0, or `none` (no monthly budget)."""
    if value.strip().lower() in ("none", "null", "off"):
        return None
    try:
        amount = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of USD: {value!r}") from None
    if not math.isfinite(amount) or amount < 0:
        raise argparse.ArgumentTypeError("the budget must be a number >= 0, or `none`")
    return amount


def run_set_budget(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    path = f"/admin/teams/{_segment(args.team_id)}"
    response = _send(args, http, err, "PATCH", path, json={"monthly_budget_usd": args.usd})
    return 1 if response is None else _print_json(response, out)


def _segment(value: str) -> str:
    """One path segment: an id with `/` or `?` in it cannot reach another route."""
    return quote(value, safe="")


def run_webhook_secret(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    response = _send(args, http, err, "POST", f"/admin/teams/{_segment(args.team_id)}/webhook-secret")
    return 1 if response is None else _print_json(response, out)
