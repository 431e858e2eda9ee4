"""Docker-free Lambda assets: each function gets only the modules and the wheels it imports.

For a handler such as `functions.search.handler.handler` we follow the imports of our own modules from
the handler's module (`functions.search.handler` -> `functions.search.app` -> `functions.common...`),
and map every third-party import to its distribution and that distribution's locked dependencies in
`uv.lock` (with the extras that pyproject asks for). The asset is those source files plus those exact
versions, installed by

    pip install --no-deps --only-binary=:all: --implementation cp --python-version 3.13
                --platform manylinux2014_aarch64 ... --target DIR

so the wheels are the Linux/arm64 builds whatever machine synthesizes. Installs are cached under
`~/.cache/evidence-research-api/` by a hash of their inputs; assets by a hash of the wheels and sources.

Mode "source" (context `bundling=source` or env `LAMBDA_BUNDLING=source`) skips pip: the asset is the
source files plus the `requirements.lock.txt` it would install. Synthesis in tests uses it; deploys must not.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from packaging.markers import Marker

REPO_ROOT = Path(__file__).resolve().parents[1]
LOCK_FILE = REPO_ROOT / "uv.lock"
BundlingMode = Literal["full", "source"]
BUNDLE_FORMAT = "1"  # bump to invalidate every cached asset

LAMBDA_PYTHON_VERSION = "3.13"
# Lambda's python3.13 runtime is Amazon Linux 2023 (glibc 2.34): every manylinux tag up to 2.34 runs.
LAMBDA_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64", "manylinux_2_34_aarch64")
LAMBDA_MARKER_ENVIRONMENT = {
    "implementation_name": "cpython",
    "implementation_version": "3.13.0",
    "os_name": "posix",
    "platform_machine": "aarch64",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_system": "Linux",
    "platform_version": "",
    "python_full_version": "3.13.0",
    "python_version": "3.13",
    "sys_platform": "linux",
}
# The Lambda Python runtime ships these; bundling them would add ~25 MB to every function.
RUNTIME_PROVIDED = frozenset({"boto3", "botocore", "s3transfer"})
# Imported by a library only when a feature is used, so no import statement of ours names them.
IMPLIED_DISTRIBUTIONS: Mapping[str, tuple[str, ...]] = {"fastapi": ("python-multipart",)}
_SKIPPED_FILES = re.compile(r"(\.pyc|\.pyo|~)$")


class BundlingError(RuntimeError):
    pass


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class FunctionSources:
    """What one handler needs: our modules (as files) and the locked third-party distributions."""

    handler: str
    files: tuple[Path, ...]  # relative to the repository root
    third_party_imports: frozenset[str]
    requirements: tuple[str, ...]  # "name==version", sorted

    def names_used(self, names: Iterable[str], root: Path = REPO_ROOT) -> frozenset[str]:
        """Which settings (such as "jobs_table") the carried Python files read as an attribute
        (`settings.jobs_table`); the definitions in functions/common/settings.py are not reads. Not a
        grant: the infra tests check that a function declares (`uses`) only what its code names."""
        text = "\n".join(
            (root / path).read_text(encoding="utf-8") for path in self.files if path.suffix == ".py"
        )
        return frozenset(name for name in names if re.search(rf"\.{re.escape(name)}\b", text))

    @property
    def distribution_names(self) -> frozenset[str]:
        return frozenset(requirement.split("==", 1)[0] for requirement in self.requirements)


@dataclass
class _ModuleGraph:
    root: Path
    first_party: frozenset[str]
    files: set[Path] = field(default_factory=set)
    third_party: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)

    def module_file(self, module: str) -> Path | None:
        base = self.root.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def visit(self, module: str) -> None:
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):  # a module's packages are imported first
            self._visit_one(".".join(parts[:depth]))

    def _visit_one(self, module: str) -> None:
        if module in self.seen:
            return
        self.seen.add(module)
        path = self.module_file(module)
        if path is None:
            return
        self.files.add(path.relative_to(self.root))
        self.files.update(_data_files(path.parent, self.root))
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for imported in _imports(tree, module, is_package):
            top = imported.split(".", 1)[0]
            if top in self.first_party:
                self.visit(imported)
            elif top not in sys.stdlib_module_names and top != "__future__":
                self.third_party.add(top)


def _data_files(directory: Path, root: Path) -> set[Path]:
    """Non-Python files beside a module (presets, schemas): shipped with the package that holds them."""
    return {
        path.relative_to(root)
        for path in directory.iterdir()
        if path.is_file() and path.suffix != ".py" and not _SKIPPED_FILES.search(path.name)
    }


def _imports(tree: ast.Module, module: str, is_package: bool) -> Iterable[str]:
    package = module if is_package else module.rpartition(".")[0]
    for node in _runtime_nodes(tree.body):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and _is_import_module(node):
            yield node.args[0].value  # type: ignore[attr-defined]  # a literal module name, checked


def _is_import_module(call: ast.Call) -> bool:
    """`importlib.import_module("functions.x")` with a literal name: an import the code makes at run time."""
    function = call.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return (
        name == "import_module"
        and bool(call.args)
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    )


def _runtime_nodes(body: list[ast.stmt]) -> Iterable[ast.AST]:
    """Every node except those under `if TYPE_CHECKING:` (type-only imports are not shipped)."""
    for statement in body:
        if isinstance(statement, ast.If) and _is_type_checking(statement.test):
            yield from _runtime_nodes(statement.orelse)
            continue
        yield from _walk_skipping_type_checking(statement)


def _walk_skipping_type_checking(node: ast.AST) -> Iterable[ast.AST]:
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _walk_skipping_type_checking(other)
            continue
        yield from _walk_skipping_type_checking(child)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def _import_to_distributions() -> dict[str, tuple[str, ...]]:
    return {
        name: tuple(normalise(d) for d in dists)
        for name, dists in importlib.metadata.packages_distributions().items()
    }


class LockedDependencies:
    """The dependency graph of `uv.lock`, evaluated for the Lambda runtime (Linux, arm64, CPython 3.13)."""

    def __init__(self, lock_file: Path = LOCK_FILE, project: str = "evidence-research-api") -> None:
        lock = tomllib.loads(lock_file.read_text(encoding="utf-8"))
        self._packages: dict[str, list[dict[str, Any]]] = {}
        for package in lock["package"]:
            self._packages.setdefault(normalise(package["name"]), []).append(package)
        root = self._package(normalise(project), None)
        self.project_dependencies: dict[str, dict[str, Any]] = {
            normalise(dep["name"]): dep for dep in root.get("dependencies", []) if self._applies(dep)
        }

    def _package(self, name: str, version: str | None) -> dict[str, Any]:
        candidates = self._packages.get(name)
        if not candidates:
            raise BundlingError(f"{name} is imported by a function but is not in uv.lock")
        if version is not None:
            candidates = [package for package in candidates if package["version"] == version]
        if len(candidates) != 1:
            raise BundlingError(
                f"cannot choose one locked version of {name}: {[c['version'] for c in candidates]}"
            )
        return candidates[0]

    @staticmethod
    def _applies(dependency: Mapping[str, Any], extra: str = "") -> bool:
        marker = dependency.get("marker")
        return marker is None or Marker(marker).evaluate({**LAMBDA_MARKER_ENVIRONMENT, "extra": extra})

    def runtime_closure(self) -> dict[str, str]:
        """Everything the project's runtime dependencies install on Lambda."""
        return self.closure(self.project_dependencies)

    def closure(self, distributions: Iterable[str]) -> dict[str, str]:
        """name -> version for the distributions and everything they need on Lambda."""
        pinned: dict[str, str] = {}
        pending: list[dict[str, Any]] = []
        for name in distributions:
            pending.append(self.project_dependencies.get(name, {"name": name}))
        visited: set[tuple[str, tuple[str, ...]]] = set()
        while pending:
            dependency = pending.pop()
            name = normalise(dependency["name"])
            extras = tuple(sorted(dependency.get("extra", ())))
            if (name, extras) in visited or name in RUNTIME_PROVIDED:
                continue
            visited.add((name, extras))
            package = self._package(name, dependency.get("version"))
            pinned[name] = package["version"]
            pending.extend(dep for dep in package.get("dependencies", []) if self._applies(dep))
            optional = package.get("optional-dependencies", {})
            for extra in extras:
                pending.extend(dep for dep in optional.get(extra, []) if self._applies(dep, extra))
        return pinned


def analyse(
    handler: str,
    root: Path = REPO_ROOT,
    locked: LockedDependencies | None = None,
    extra_distributions: Iterable[str] = (),
) -> FunctionSources:
    """The files and pinned requirements a handler ("package.module.function") needs.

    `extra_distributions`: what the function runs that no import of ours names (the ASGI server that
    the Lambda Web Adapter's start script launches); held to the same rule as imports."""
    module = handler.rpartition(".")[0]
    first_party = frozenset(
        path.name
        for path in root.iterdir()
        if (path / "__init__.py").is_file() and not path.name.startswith(".")
    )
    graph = _ModuleGraph(root, first_party)
    graph.visit(module)
    if graph.module_file(module) is None:
        raise BundlingError(f"handler module {module} not found under {root}")
    distributions: set[str] = set()
    for name in sorted(graph.third_party):
        found = _import_to_distributions().get(name)
        if not found:
            raise BundlingError(f"{handler}: cannot tell which distribution provides `import {name}`")
        distributions.update(found)
    for name in list(distributions):
        distributions.update(IMPLIED_DISTRIBUTIONS.get(name, ()))
    distributions.update(normalise(name) for name in extra_distributions)
    locked = locked or LockedDependencies()
    deployable = locked.runtime_closure()
    missing = sorted(name for name in distributions - RUNTIME_PROVIDED if name not in deployable)
    if missing:
        raise BundlingError(
            f"{handler} imports {missing}, which are not (transitive) runtime dependencies in "
            "pyproject.toml; dev and local dependency groups are not deployed"
        )
    pins = locked.closure(sorted(distributions - RUNTIME_PROVIDED))
    return FunctionSources(
        handler=handler,
        files=tuple(sorted(graph.files)),
        third_party_imports=frozenset(graph.third_party),
        requirements=tuple(f"{name}=={version}" for name, version in sorted(pins.items())),
    )


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evidence-research-api"


def _pip_command() -> list[str]:
    tools_pip = REPO_ROOT / ".tools" / "bin" / "pip"
    if tools_pip.is_file():
        return [str(tools_pip)]
    return [sys.executable, "-m", "pip"]


def pip_arguments(requirements_file: Path, target: Path) -> list[str]:
    platforms = [argument for platform in LAMBDA_PLATFORMS for argument in ("--platform", platform)]
    return [
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",  # the closure is already resolved from uv.lock
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        LAMBDA_PYTHON_VERSION,
        *platforms,
        "--target",
        str(target),
        "--requirement",
        str(requirements_file),
    ]


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:24]


def install_requirements(requirements: tuple[str, ...]) -> Path:
    """A directory with exactly these wheels for Lambda, built once per distinct set of inputs."""
    text = "".join(f"{line}\n" for line in requirements)
    key = _digest(
        BUNDLE_FORMAT.encode(),
        text.encode(),
        " ".join(LAMBDA_PLATFORMS).encode(),
        LAMBDA_PYTHON_VERSION.encode(),
    )
    target = cache_root() / "wheels" / key
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        requirements_file = Path(scratch) / "requirements.txt"
        requirements_file.write_text(text, encoding="utf-8")
        staging = Path(scratch) / "site"
        if requirements:
            subprocess.run([*_pip_command(), *pip_arguments(requirements_file, staging)], check=True)  # noqa: S603
        else:
            staging.mkdir()
        for cached in staging.rglob("__pycache__"):
            shutil.rmtree(cached, ignore_errors=True)
        try:
            staging.rename(target)
        except OSError:  # another synth built it meanwhile
            if not target.is_dir():
                raise
    return target


def build_asset(
    sources: FunctionSources,
    mode: BundlingMode,
    root: Path = REPO_ROOT,
    executables: Mapping[str, str] | None = None,
) -> Path:
    """The directory to hand to `lambda.Code.from_asset`: sources (+ wheels in "full" mode), plus
    `executables` (asset-relative name -> text) written with mode 755, such as a start script."""
    requirements_text = "".join(f"{line}\n" for line in sources.requirements)
    file_parts = [part for path in sources.files for part in (str(path).encode(), (root / path).read_bytes())]
    script_parts = [
        part for name, text in sorted((executables or {}).items()) for part in (name.encode(), text.encode())
    ]
    wheels = install_requirements(sources.requirements) if mode == "full" else None
    key = _digest(
        BUNDLE_FORMAT.encode(),
        mode.encode(),
        requirements_text.encode(),
        str(wheels).encode(),
        *file_parts,
        *script_parts,
    )
    target = cache_root() / "assets" / key
    if target.is_dir():
        target.touch()  # recently used: kept by _prune
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        staging = Path(scratch) / "asset"
        if wheels is not None:
            shutil.copytree(wheels, staging)
        else:
            staging.mkdir()
        for path in sources.files:
            destination = staging / path
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / path, destination)
        if mode == "full" and EMBEDDER_MODULE in sources.files:
            write_embedding_model(staging)
        for name, text in (executables or {}).items():
            script = staging / name
            script.write_text(text, encoding="utf-8")
            script.chmod(0o755)  # the CDK CLI zips each file with its mode; Lambda execs the script
        (staging / "requirements.lock.txt").write_text(requirements_text, encoding="utf-8")
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    _prune(target.parent, keep=target)
    return target


def web_adapter_start_script(asgi_app: str, port_variable: str = "AWS_LWA_PORT") -> str:
    """The Lambda Web Adapter's exec wrapper (`/opt/bootstrap`) runs `$LAMBDA_TASK_ROOT/$_HANDLER`: this
    script, which serves the app with uvicorn on the port the adapter forwards each invocation to. The
    Python runtime's interpreter finds the runtime's boto3 itself; the asset root holds everything else."""
    return (
        "#!/bin/bash\n"
        'cd "$LAMBDA_TASK_ROOT" || exit 1\n'
        'export PYTHONPATH="$LAMBDA_TASK_ROOT${PYTHONPATH:+:$PYTHONPATH}"\n'
        f'exec python3 -m uvicorn {asgi_app} --host 127.0.0.1 --port "${port_variable}" --no-access-log\n'
    )


EMBEDDER_MODULE = Path("functions/common/ml/embedder.py")


def write_embedding_model(asset: Path) -> None:
    """A function that embeds text ships the MiniLM weights as int8 artifacts (about 23 MB instead of
    90 MB), where `functions.common.ml.embedder` looks for them first."""
    from functions.common.ml.embedder import BUNDLED_DIR, CHECKOUT_DIR
    from functions.common.ml.minilm import MiniLmEmbedder

    if not (CHECKOUT_DIR / "model.safetensors").is_file():
        raise FileNotFoundError(f"no embedding model at {CHECKOUT_DIR}: run `make install` first")
    target = asset / BUNDLED_DIR.relative_to(REPO_ROOT)
    target.mkdir(parents=True, exist_ok=True)
    for name, data in MiniLmEmbedder.from_model_dir(CHECKOUT_DIR).to_artifacts().items():
        (target / name).write_bytes(data)


def _prune(directory: Path, keep: Path, max_age_seconds: float = 14 * 86400) -> None:
    """Every source edit makes a new asset; drop those nobody has built for two weeks."""
    cutoff = time.time() - max_age_seconds
    for entry in directory.iterdir():
        if entry != keep and entry.is_dir() and entry.stat().st_mtime < cutoff:
            shutil.rmtree(entry, ignore_errors=True)


def directory_size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
