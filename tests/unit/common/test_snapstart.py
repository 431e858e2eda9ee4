"""SnapStart restore hooks: what init left in memory that must not outlive a restore is refreshed."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import boto3

from functions.common import aws, snapstart

REPO = Path(__file__).resolve().parents[3]


def test_the_restore_hooks_of_the_handlers_are_registered() -> None:
    hooks = snapstart.registered_hooks()
    assert aws.reset_after_restore in hooks
    assert snapstart.reseed_random in hooks


def test_after_restore_boto3_clients_and_the_default_session_are_rebuilt() -> None:
    before = aws.generic_client("s3")
    assert aws.generic_client("s3") is before  # cached within one environment
    boto3.setup_default_session(region_name="us-east-1")
    session = boto3.DEFAULT_SESSION
    snapstart.run_after_restore()
    assert boto3.DEFAULT_SESSION is not session
    assert aws.generic_client("s3") is not before  # built anew, with the credentials of now


def test_after_restore_the_random_sequence_differs_from_the_snapshot() -> None:
    random.seed(1234)  # the state a snapshot would freeze
    state = random.getstate()
    snapshot_draws = [random.random() for _ in range(3)]
    random.setstate(state)
    snapstart.run_after_restore()
    assert [random.random() for _ in range(3)] != snapshot_draws


def test_hooks_register_with_the_lambda_runtime_library_when_it_is_there(tmp_path: Path) -> None:
    """On Lambda, `snapshot_restore_py` (part of the Python runtime) receives every hook: those of the
    modules the handler imports, and those of the modules it imports lazily, which the runtime's
    before-snapshot hooks import (the boto3 clients' reset comes with the search service)."""
    (tmp_path / "snapshot_restore_py.py").write_text(
        "registered = []\nbefore = []\n"
        "def register_after_restore(func, *args, **kwargs):\n    registered.append(func)\n"
        "def register_before_snapshot(func, *args, **kwargs):\n    before.append(func)\n",
        encoding="utf-8",
    )
    probe = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import functions.search.handler\n"
        "import snapshot_restore_py\n"
        "for hook in reversed(snapshot_restore_py.before):\n    hook()\n"  # the runtime's order
        "print(sorted(f.__name__ for f in snapshot_restore_py.registered))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "['reseed_random', 'reset_after_restore']"


def test_without_the_runtime_library_hooks_are_only_recorded() -> None:
    probe = "import functions.common.snapstart as s\nprint(s._runtime_registrar())\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "None"


def test_before_the_snapshot_the_lazily_imported_libraries_are_imported(tmp_path: Path) -> None:
    """Under SnapStart init is paid once per version: what routes import on first use goes into it."""
    (tmp_path / "snapshot_restore_py.py").write_text(
        "before = []\n"
        "def register_before_snapshot(func, *args, **kwargs):\n    before.append(func)\n"
        "def register_after_restore(func, *args, **kwargs):\n    pass\n",
        encoding="utf-8",
    )
    probe = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import functions.orchestrate.steps.screen, functions.rag.handler\n"
        "import snapshot_restore_py\n"
        "assert 'numpy' not in sys.modules\n"
        "for hook in reversed(snapshot_restore_py.before):\n    hook()\n"  # the runtime's order
        "print(sorted(m for m in ('numpy', 'bm25s', 'functions.rag.index') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "['bm25s', 'functions.rag.index', 'numpy']"
