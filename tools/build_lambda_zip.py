#!/usr/bin/env python3
"""Build the Lambda deployment zip: ``dist/lambda.zip`` for the python3.11 x86_64 runtime.

    python tools/build_lambda_zip.py [--output dist/lambda.zip]

1. ``pip install --target`` the runtime dependencies (``[project] dependencies`` and the ``lambda``
   and ``mcp`` extras of pyproject.toml: the agent's SDK, the HTTP edge's JWT check and the MCP
   function's SDK, about 1.4 MB of the zip) as manylinux2014 x86_64 CPython 3.11 wheels, every
   version pinned by ``constraints.txt``. boto3 and botocore are included, pinned, although the
   runtime has its own: the function then runs what the tests ran. manylinux2014 (glibc 2.17) because
   the python3.11 runtime is Amazon Linux 2 (glibc 2.26): newer manylinux wheels would not load there.
2. Add from this checkout the files of the ``s3memory`` package that the handlers need, and only
   those (:data:`LAMBDA_PACKAGE_FILES`, an allow-list): ``s3memory demo``'s ``demo/``, the tests'
   ``testing/``, ``s3memory mcp``'s stdio server and env file, and the operator command's modules are
   not on it.
3. Write a deterministic zip: entries sorted, timestamps fixed (1980-01-01), modes fixed (0644), no
   ``__pycache__``/``*.pyc``, no ``bin/`` scripts. The same inputs give the same bytes.

Exit status: 0 built; 1 refused (an unpinned dependency, a missing file); 3 pip failed (its output
is on stderr; a registry that cannot be reached ends here).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "s3memory"
DEFAULT_OUTPUT = REPO_ROOT / "dist" / "lambda.zip"
DEFAULT_PLATFORM = "manylinux2014_x86_64"
DEFAULT_PYTHON_VERSION = "3.11"
EXTRAS = ("lambda", "mcp")
FIXED_DATE_TIME = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o100644
EXCLUDED_DIRECTORIES = frozenset({"__pycache__"})
EXCLUDED_TOP_LEVEL = frozenset({"bin"})
EXCLUDED_SUFFIXES = (".pyc", ".pyo")
LAMBDA_PACKAGE_FILES = (
    "__init__.py",
    "_version.py",
    "py.typed",
    "clients.py",
    "errors.py",
    "memory.py",
    "assembly.py",
    "placed.py",
    "memories.py",
    "mounts.py",
    "settings.py",
    "store.py",
    "tool.py",
    "core/",
    "core/confusables.tsv",
    "core/confusables-license.txt",
    "crypto/",
    "edge/",
    "formats/",
    "storage/",
    "sync/",
    "ops/__init__.py",
    "ops/context.py",
    "ops/erase.py",
    "ops/folder_writes.py",
    "ops/folders.py",
    "ops/idle_expiry.py",
    "ops/inventory.py",
    "ops/operations.py",
    "ops/progress.py",
    "ops/sync.py",
    "ops/transfer.py",
    "ops/verify.py",
    "ops/writes.py",
    "aws_lambda/",
    "mcp/__init__.py",
    "mcp/connections.py",
    "mcp/http.py",
    "mcp/limits.py",
    "mcp/schema.py",
    "mcp/server.py",
    "mcp/startup.py",
)
"""What the handlers need of the package, relative to it: the modules that the three handlers
(terraform/lambda.tf) import, directly or through one another, at import or later; and the package
data (pyproject.toml's ``package-data``: ``py.typed``, the look-alike table and its licence).
A name ending in ``/`` is a subpackage: every ``*.py`` below it. tests/deploy/test_lambda_zip.py fails when
a module the handlers import is missing here, and when one is here that they do not import."""
EXIT_REFUSED = 1
EXIT_PIP_FAILED = 3


class BuildError(Exception):
    """The build was refused; the message says why."""

    def __init__(self, message: str, exit_code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_constraints(path: Path) -> dict[str, str]:
    """``name==version`` lines of a constraints file, by normalized name."""
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;]+)", text)
        if match:
            pins[normalized(match.group(1))] = match.group(2)
    return pins


def runtime_requirements(pyproject: Path, extras: Sequence[str] = EXTRAS) -> list[str]:
    """The distribution names the package needs at run time, with the given extras."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        requirements.extend(project.get("optional-dependencies", {}).get(extra, []))
    names: list[str] = []
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if match and normalized(match.group(1)) not in {normalized(name) for name in names}:
            names.append(match.group(1))
    return names


def pinned(names: Iterable[str], pins: dict[str, str]) -> list[str]:
    """``name==version`` for each name; refuses a name that the constraints do not pin."""
    missing = [name for name in names if normalized(name) not in pins]
    if missing:
        raise BuildError(f"not pinned in constraints.txt: {', '.join(missing)}")
    return [f"{name}=={pins[normalized(name)]}" for name in names]


def pip_install(
    requirements: Sequence[str], target: Path, constraints: Path, platform: str, python_version: str
) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-input",
        "--disable-pip-version-check",
        "--no-compile",
        "--only-binary=:all:",
        "--platform",
        platform,
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "--target",
        str(target),
        "--constraint",
        str(constraints),
        *requirements,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise BuildError(f"pip install failed with exit code {result.returncode}", EXIT_PIP_FAILED)


def check_installed_pins(target: Path, pins: dict[str, str]) -> list[str]:
    """``name==version`` of every distribution in ``target``; refuses any the constraints do not pin
    to that version (the zip must hold exactly what constraints.txt names)."""
    installed: list[str] = []
    problems: list[str] = []
    for dist_info in sorted(target.glob("*.dist-info")):
        name, _, version = dist_info.name[: -len(".dist-info")].partition("-")
        installed.append(f"{name}=={version}")
        wanted = pins.get(normalized(name))
        if wanted != version:
            problems.append(f"{name} {version} (constraints.txt: {wanted or 'not pinned'})")
    if problems:
        raise BuildError("installed versions not pinned by constraints.txt: " + "; ".join(problems))
    return installed


def _excluded(relative: Path) -> bool:
    parts = relative.parts
    return (
        any(part in EXCLUDED_DIRECTORIES for part in parts)
        or (len(parts) > 1 and parts[0] in EXCLUDED_TOP_LEVEL)
        or relative.name.endswith(EXCLUDED_SUFFIXES)
    )


def tree_entries(root: Path) -> dict[str, Path]:
    """Every file below ``root`` that goes into the zip, by archive name."""
    entries: dict[str, Path] = {}
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if path.is_file() and not path.is_symlink() and not _excluded(relative):
            entries[relative.as_posix()] = path
    return entries


def package_entries(source: Path) -> dict[str, Path]:
    """The package's files on :data:`LAMBDA_PACKAGE_FILES`, by archive name; refuses a name on it that
    the package does not have (the list is stale)."""
    entries: dict[str, Path] = {}
    for name in LAMBDA_PACKAGE_FILES:
        path = source / name
        if name.endswith("/") and path.is_dir():
            found = [module for module in path.rglob("*.py") if module.is_file()]
        else:
            found = [path] if path.is_file() else []
        if not found:
            raise BuildError(f"{PACKAGE}/{name} is on the zip's allow-list but not in {source}")
        for module in found:
            relative = module.relative_to(source.parent)
            if not _excluded(relative):
                entries[relative.as_posix()] = module
    return entries


def write_zip(entries: dict[str, Path], output: Path) -> None:
    """A deterministic zip of ``entries``: sorted, fixed times and modes, deflated."""
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE_TIME)
            info.create_system = 3  # Unix, so that external_attr holds the mode
            info.external_attr = FILE_MODE << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, entries[name].read_bytes(), compresslevel=9)
    os.replace(partial, output)


def build(
    output: Path = DEFAULT_OUTPUT,
    *,
    constraints: Path = REPO_ROOT / "constraints.txt",
    platform: str = DEFAULT_PLATFORM,
    python_version: str = DEFAULT_PYTHON_VERSION,
) -> list[str]:
    """Build the zip at ``output``; returns the pinned distributions it holds."""
    pins = read_constraints(constraints)
    requirements = pinned(runtime_requirements(REPO_ROOT / "pyproject.toml"), pins)
    package = package_entries(REPO_ROOT / PACKAGE)
    with tempfile.TemporaryDirectory(prefix="s3memory-lambda-") as staging:
        target = Path(staging) / "site"
        pip_install(requirements, target, constraints, platform, python_version)
        installed = check_installed_pins(target, pins)
        if (target / PACKAGE).exists():
            shutil.rmtree(target / PACKAGE)
        entries = tree_entries(target)
        entries.update(package)
        write_zip(entries, output)
    return installed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="default: dist/lambda.zip")
    parser.add_argument("--constraints", type=Path, default=REPO_ROOT / "constraints.txt")
    parser.add_argument("--platform", default=DEFAULT_PLATFORM, help="pip --platform (default: %(default)s)")
    parser.add_argument("--python-version", default=DEFAULT_PYTHON_VERSION, help="default: %(default)s")
    options = parser.parse_args(argv)
    try:
        installed = build(
            options.output,
            constraints=options.constraints,
            platform=options.platform,
            python_version=options.python_version,
        )
    except BuildError as error:
        print(f"build_lambda_zip: {error}", file=sys.stderr)
        return error.exit_code
    data = options.output.read_bytes()
    with zipfile.ZipFile(options.output) as archive:
        count = len(archive.infolist())
    print(
        f"{options.output}: {len(data) / 2**20:.1f} MiB, {count} files, "
        f"sha256 {hashlib.sha256(data).hexdigest()}\n  " + "\n  ".join(installed)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
