"""The Lambda deployment zip from tools/build_lambda_zip.py: contents, determinism, wheels that fit the
python3.11 x86_64 runtime, and the handlers running from the extracted zip alone (``python -S``, so
nothing of this virtualenv is importable), against moto's S3 server and the scripted Messages API.

The package files come from an allow-list (``LAMBDA_PACKAGE_FILES``), checked here, without the
build, against the modules the handlers of terraform/lambda.tf import (read from the sources, lazy
imports too): none missing, none extra, neither the demo nor the testing module nor the command line
(nor ``s3memory mcp``'s stdio server: the MCP function serves the HTTP transport's app).

The build downloads wheels from the package registry (pip's cache makes later builds quick). When
the registry cannot be reached, the tests skip and say so.
"""

from __future__ import annotations

import ast
import base64
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import s3memory
from s3memory.testing.script import Reply, last_tool_results
from s3memory.testing.scripted_claude import ScriptedClaude
from tests.support.issuer import http_event, loopback_issuer
from tests.support.mcp_messages import INITIALIZE, MCP_HEADERS, tools_call

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL = REPO_ROOT / "tools" / "build_lambda_zip.py"
BUILD_TIMEOUT_SECONDS = 900
RUN_TIMEOUT_SECONDS = 120
NETWORK_FAILURES = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|"
    r"Name or service not known|ConnectTimeoutError|ConnectionError|ProxyError|Network is unreachable|"
    r"Could not fetch URL|ReadTimeoutError|SSLError"
)
# Amazon Linux 2 (the python3.11 runtime) has glibc 2.26: no wheel may need a newer one.
RUNTIME_GLIBC = (2, 26)
BUCKET = "zip-test-memory"
HANDLERS = re.findall(
    r'handler\s*=\s*"(s3memory\.[\w.]+)"', (REPO_ROOT / "terraform" / "lambda.tf").read_text()
)
"""The handler strings the functions are deployed with."""
NOT_IN_THE_ZIP = (
    "s3memory/demo/",
    "s3memory/testing/",
    "s3memory/cli/",
    "s3memory/mcp/stdio.py",
    "s3memory/mcp/env_file.py",
)


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_lambda_zip", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("lambda-zip") / "lambda.zip"
    result = subprocess.run(
        [sys.executable, str(TOOL), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
        check=False,
        cwd=REPO_ROOT,
    )
    if result.returncode == 3 and NETWORK_FAILURES.search(result.stderr):
        last = [line for line in result.stderr.splitlines() if line.strip()][-1:]
        pytest.skip(f"the package registry cannot be reached, so no wheels for the zip: {last}")
    assert result.returncode == 0, f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    return output


@pytest.fixture(scope="module")
def extracted(built_zip: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lambda-task")
    with zipfile.ZipFile(built_zip) as archive:
        archive.extractall(root)
    return root


def test_zip_holds_the_package_and_its_dependencies(built_zip: Path) -> None:
    with zipfile.ZipFile(built_zip) as archive:
        names = archive.namelist()
    for wanted in (
        "s3memory/__init__.py",
        "s3memory/_version.py",
        "s3memory/settings.py",
        "s3memory/aws_lambda/__init__.py",
        "s3memory/py.typed",
        "anthropic/__init__.py",
        "boto3/__init__.py",
        "botocore/__init__.py",
        "cryptography/__init__.py",
        "mcp/__init__.py",
        "starlette/__init__.py",
    ):
        assert wanted in names, wanted
    assert any(re.fullmatch(r"cryptography/hazmat/bindings/_rust\.abi3\.so", name) for name in names)
    assert not [name for name in names if "__pycache__" in name or name.endswith((".pyc", ".pyo"))]
    assert not [name for name in names if name.startswith("bin/")]
    assert not [name for name in names if name.startswith(("tests/", "tools/", "terraform/"))]


def module_file(module: str) -> Path | None:
    """The source of a module of the package in this checkout; None for a module it does not have."""
    base = REPO_ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _runtime_imports(tree: ast.Module) -> Iterable[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, in functions too, but those under ``if TYPE_CHECKING:``."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            pending.extend(node.orelse)
        else:
            pending.extend(ast.iter_child_nodes(node))


def imported_modules(roots: Iterable[str]) -> set[str]:
    """The package's modules that importing ``roots`` and running their code may import: each root,
    its parent packages, and so on through every module imported."""
    found: set[str] = set()
    pending = list(roots)
    while pending:
        module = pending.pop()
        parts = module.split(".")
        named = {".".join(parts[:end]) for end in range(1, len(parts) + 1)}
        for name in named - found:
            path = module_file(name)
            assert path is not None, f"{name} (imported by the handlers) is not in the package"
            found.add(name)
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            for statement in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(statement, ast.Import):
                    targets = [alias.name for alias in statement.names]
                else:
                    anchor = package.split(".")[: len(package.split(".")) - statement.level + 1]
                    base = ".".join(anchor) if statement.level else ""
                    base = ".".join(part for part in (base, statement.module or "") if part)
                    targets = [base, *(f"{base}.{alias.name}" for alias in statement.names)]
                pending.extend(
                    target
                    for target in targets
                    if target.split(".")[0] == "s3memory" and module_file(target) is not None
                )
    return found


def handler_modules() -> set[str]:
    """What the deployed handlers import, and the modules of the names ``s3memory`` offers."""
    assert len(HANDLERS) == 4, HANDLERS
    roots = [handler.rpartition(".")[0] for handler in HANDLERS]
    roots += [getattr(s3memory, name).__module__ for name in s3memory.__all__ if name != "__version__"]
    return imported_modules(roots)


def package_data() -> list[str]:
    """The package's data files (pyproject.toml's ``package-data``), relative to it."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(pyproject["tool"]["setuptools"]["package-data"]["s3memory"])


def test_the_allow_list_is_what_the_handlers_import() -> None:
    needed = {module_file(module) for module in handler_modules()}
    wanted = {path.relative_to(REPO_ROOT).as_posix() for path in needed if path is not None}
    wanted.update(f"s3memory/{name}" for name in package_data())
    entries = set(load_tool().package_entries(REPO_ROOT / "s3memory"))
    assert sorted(wanted - entries) == [], "imported by the handlers, missing from LAMBDA_PACKAGE_FILES"
    assert sorted(entries - wanted) == [], "on LAMBDA_PACKAGE_FILES, imported by no handler"
    assert not [name for name in entries if name.startswith(NOT_IN_THE_ZIP)]


def test_imported_modules_follows_lazy_and_relative_imports_but_not_type_checking() -> None:
    found = imported_modules(["s3memory.aws_lambda"])
    assert "s3memory.aws_lambda.agent.handler" in found  # agent_handler, a lazy attribute
    assert "s3memory.clients" in found  # imported inside a function of the agent's credentials
    assert "s3memory.aws_lambda.expiry" not in found  # a handler of its own, imported by no other
    # ``import s3memory`` imports its version only: the rest is named under TYPE_CHECKING and imported
    # by name on first use (which handler_modules adds).
    assert imported_modules(["s3memory"]) == {"s3memory", "s3memory._version"}


def test_a_stale_allow_list_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    tool = load_tool()
    monkeypatch.setattr(tool, "LAMBDA_PACKAGE_FILES", (*tool.LAMBDA_PACKAGE_FILES, "gone.py"))
    with pytest.raises(tool.BuildError) as refused:
        tool.package_entries(REPO_ROOT / "s3memory")
    assert (
        str(refused.value)
        == f"s3memory/gone.py is on the zip's allow-list but not in {REPO_ROOT / 's3memory'}"
    )
    assert refused.value.exit_code == 1


def test_zip_holds_the_allow_listed_package_files_only(built_zip: Path) -> None:
    with zipfile.ZipFile(built_zip) as archive:
        packaged = {name for name in archive.namelist() if name.startswith("s3memory/")}
    assert packaged == set(load_tool().package_entries(REPO_ROOT / "s3memory"))
    assert not [name for name in packaged if name.startswith(NOT_IN_THE_ZIP)]


def test_zip_is_deterministic(built_zip: Path, extracted: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(built_zip) as archive:
        infos = archive.infolist()
    names = [info.filename for info in infos]
    assert names == sorted(names)
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.external_attr >> 16 for info in infos} == {0o100644}
    # Zipping the extracted tree again gives the very same bytes: nothing depends on time or order.
    tool = load_tool()
    again = tmp_path / "again.zip"
    tool.write_zip(tool.tree_entries(extracted), again)
    assert again.read_bytes() == built_zip.read_bytes()


def test_the_zip_is_the_size_docs_deploy_states(built_zip: Path) -> None:
    """``docs/deploy.md`` states the zip's size and its size unpacked, in MiB: each within 10%."""
    deploy = (REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    stated = re.search(r"It is about (\d+) MiB \((\d+) MiB unpacked;", deploy)
    assert stated is not None
    with zipfile.ZipFile(built_zip) as archive:
        unpacked = sum(info.file_size for info in archive.infolist())
    measured = (built_zip.stat().st_size / 2**20, unpacked / 2**20)
    for size, said in zip(measured, (int(stated[1]), int(stated[2])), strict=True):
        assert abs(size - said) <= 0.1 * said, measured


def fits_the_runtime(tag: str) -> bool:
    """Whether a wheel tag loads on CPython 3.11, x86_64, glibc 2.26 (the python3.11 runtime)."""
    python, abi, platform = tag.split("-")
    if not (
        python in ("py3", "cp311") or (abi == "abi3" and python in ("cp37", "cp38", "cp39", "cp310", "cp311"))
    ):
        return False
    if platform == "any":
        return abi == "none"
    match = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64|manylinux(2014|2010|1)_x86_64", platform)
    if match is None:
        return False
    legacy = {"2014": (2, 17), "2010": (2, 12), "1": (2, 5)}
    glibc = legacy[match.group(3)] if match.group(3) else (int(match.group(1)), int(match.group(2)))
    return glibc <= RUNTIME_GLIBC


def test_fits_the_runtime() -> None:
    assert fits_the_runtime("cp311-abi3-manylinux2014_x86_64")
    assert fits_the_runtime("cp311-cp311-manylinux_2_17_x86_64") and fits_the_runtime("py3-none-any")
    assert not fits_the_runtime("cp311-cp311-manylinux_2_28_x86_64")
    assert not fits_the_runtime("cp311-cp311-manylinux2014_aarch64")
    assert not fits_the_runtime("cp312-cp312-manylinux2014_x86_64") and not fits_the_runtime("py2-none-any")


def test_wheels_fit_the_python311_x86_64_runtime(extracted: Path) -> None:
    constraints = load_tool().read_constraints(REPO_ROOT / "constraints.txt")
    seen: set[str] = set()
    for wheel_file in sorted(extracted.glob("*.dist-info/WHEEL")):
        name, _, version = wheel_file.parent.name.removesuffix(".dist-info").partition("-")
        normalized = re.sub(r"[-_.]+", "-", name).lower()
        seen.add(normalized)
        assert constraints[normalized] == version, name  # exactly the pinned version
        lines = wheel_file.read_text().splitlines()
        tags = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:")]
        assert any(fits_the_runtime(tag) for tag in tags), (name, tags)
    assert {"anthropic", "boto3", "botocore", "cryptography", "pydantic-core"} <= seen


def run_from_zip(extracted: Path, endpoint: str, script: str, **extra_env: str) -> dict[str, Any]:
    """Run ``script`` with only the extracted zip importable (``-S``: no site-packages)."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(extracted),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": base64.b64encode(bytes(range(32))).decode("ascii"),
        "S3MEMORY_ENDPOINT_URL": endpoint,
        "S3MEMORY_METRICS": "off",
        **extra_env,
    }
    result = subprocess.run(
        [sys.executable, "-S", "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        env=environment,
        cwd=extracted,
        check=False,
    )
    assert result.returncode == 0, f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    outcome: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return outcome


def test_every_handler_resolves_from_the_zip_alone(extracted: Path, moto_endpoint_with_bucket: str) -> None:
    """Each handler string of terraform/lambda.tf, resolved as the runtime does with only the zip to
    import from: all it loads of the package is in the zip, and none of it is the demo, the testing
    module or the command."""
    outcome = run_from_zip(
        extracted,
        moto_endpoint_with_bucket,
        f"""
        import importlib, json, sys
        for handler in {HANDLERS!r}:
            module, _, name = handler.rpartition(".")
            assert callable(getattr(importlib.import_module(module), name)), handler
        print(json.dumps({{m: sys.modules[m].__file__ for m in sorted(sys.modules) if m.split(".")[0] == "s3memory"}}))
        """,
    )
    assert "s3memory.aws_lambda.agent.handler" in outcome and "s3memory.aws_lambda.expiry" in outcome
    packages = {".".join(module.split(".")[:2]) for module in outcome}
    assert not packages & {"s3memory.demo", "s3memory.testing", "s3memory.cli"}
    for path in outcome.values():
        assert Path(path).is_relative_to(extracted), path


def test_memory_handler_runs_from_the_zip_without_anthropic(
    extracted: Path, moto_endpoint_with_bucket: str
) -> None:
    outcome = run_from_zip(
        extracted,
        moto_endpoint_with_bucket,
        """
        import json, sys
        from s3memory.aws_lambda import memory_handler
        created = memory_handler({"user_id": "zip", "input": {"command": "create", "path": "/memories/z.md", "file_text": "from the zip"}}, None)
        viewed = memory_handler({"user_id": "zip", "input": {"command": "view", "path": "/memories/z.md"}}, None)
        import boto3, botocore, cryptography, s3memory
        from cryptography.hazmat.bindings import _rust
        from s3memory.core.confusables import lookalike_key  # its table is package data
        print(json.dumps({
            "created": created, "viewed": viewed, "anthropic": "anthropic" in sys.modules,
            "lookalike": lookalike_key("t\\u0435am") == lookalike_key("team"),
            "version": s3memory.__version__,
            "files": [m.__file__ for m in (s3memory, boto3, botocore, cryptography, _rust)],
        }))
        """,
    )
    assert outcome["created"] == {
        "content": "File created successfully at: /memories/z.md",
        "is_error": False,
    }
    assert outcome["viewed"]["is_error"] is False and "from the zip" in outcome["viewed"]["content"]
    assert outcome["anthropic"] is False
    assert outcome["lookalike"] is True
    assert outcome["version"] == s3memory.__version__  # from the package itself: the zip has no dist-info
    for path in outcome["files"]:
        assert Path(path).is_relative_to(extracted), path


def test_mcp_handler_runs_from_the_zip(extracted: Path, moto_endpoint_with_bucket: str) -> None:
    """The MCP function from the zip alone: an ``initialize`` and a ``tools/call`` through API
    Gateway's events, the token verified against the loopback issuer, the MCP SDK from the zip."""
    url = "https://abc123.execute-api.us-east-1.amazonaws.com/mcp"
    with loopback_issuer() as issuer:
        events = [
            http_event(body, token=issuer.token("zip"), route="ANY /mcp", method="POST", headers=MCP_HEADERS)
            for body in (
                INITIALIZE,
                tools_call({"command": "create", "path": "/memories/m.md", "file_text": "mcp"}),
            )
        ]
        outcome = run_from_zip(
            extracted,
            moto_endpoint_with_bucket,
            f"""
            import json, sys
            from s3memory.aws_lambda import mcp_handler
            answers = [mcp_handler(event, None) for event in {events!r}]
            import mcp, starlette, pydantic_core
            print(json.dumps({{
                "answers": answers, "anthropic": "anthropic" in sys.modules,
                "files": [m.__file__ for m in (mcp, starlette, pydantic_core)],
            }}))
            """,
            **issuer.environ(S3MEMORY_MCP_URL=url),
        )
    initialized, created = (json.loads(answer["body"]) for answer in outcome["answers"])
    assert [answer["statusCode"] for answer in outcome["answers"]] == [200, 200]
    assert initialized["result"]["serverInfo"]["name"] == "s3memory"
    assert created["result"] == {
        "content": [{"type": "text", "text": "File created successfully at: /memories/m.md"}],
        "isError": False,
    }
    assert outcome["anthropic"] is False
    for path in outcome["files"]:
        assert Path(path).is_relative_to(extracted), path


def test_agent_handler_runs_from_the_zip(extracted: Path, moto_endpoint_with_bucket: str) -> None:
    with ScriptedClaude(
        [
            Reply("Saving.", [{"command": "create", "path": "/memories/agent.md", "file_text": "zip agent"}]),
            lambda messages: "Done: " + last_tool_results(messages)[0].text,
        ]
    ) as api:
        outcome = run_from_zip(
            extracted,
            moto_endpoint_with_bucket,
            """
            import json
            from s3memory.aws_lambda import agent_handler
            answer = agent_handler({"user_id": "zip", "prompt": "remember this"}, None)
            import anthropic, pydantic_core
            print(json.dumps({"answer": answer, "files": [anthropic.__file__, pydantic_core.__file__]}))
            """,
            ANTHROPIC_BASE_URL=api.base_url,
            ANTHROPIC_API_KEY="sk-zip-test",
        )
        assert api.api_keys == ["sk-zip-test", "sk-zip-test"]
    answer = outcome["answer"]
    assert answer["text"] == "Done: File created successfully at: /memories/agent.md"
    assert (answer["iterations"], answer["stopped_early"]) == (2, None)
    for path in outcome["files"]:
        assert Path(path).is_relative_to(extracted), path
