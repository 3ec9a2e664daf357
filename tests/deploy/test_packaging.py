"""The package as a user installs it: a wheel built from this checkout goes into a fresh virtualenv,
where ``s3memory demo`` without the ``demo`` extra names the extra and exits 2 (no traceback), as
``s3memory mcp`` does without the ``mcp`` extra,
``s3memory --version`` answers, and with ``s3memory[demo]`` installed the demo runs and recalls.
Also: the wheel's metadata (version from ``s3memory/_version.py``, the LICENSE, the extras), and the
command's answers in this process.

The fresh-virtualenv test downloads from the package registry (versions pinned by constraints.txt;
pip's cache makes reruns quick). It skips only where ``python -m venv`` cannot make a virtualenv
with pip (no ``ensurepip``).
"""

from __future__ import annotations

import email.parser
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import s3memory
from s3memory import demo
from s3memory.cli import main as cli
from s3memory.demo import walkthrough

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

ROOT = Path(__file__).resolve().parents[2]
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE")
PIP_TIMEOUT_SECONDS = 900
RUN_TIMEOUT_SECONDS = 180
HINT = "pip install -e '.[demo]' in the s3memory checkout (or its wheel with [demo])"
RECALLED = ["- Concise answers.", "- British English spelling and style.", walkthrough.PROGRESS_ENTRY.strip()]


def _run(
    command: list[str], cwd: Path, timeout: float = RUN_TIMEOUT_SECONDS
) -> subprocess.CompletedProcess[str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}
    }
    environment.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONUNBUFFERED="1")
    return subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout, check=False
    )


def _explain(result: subprocess.CompletedProcess[str]) -> str:
    return f"{result.args}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built (by pip, in an isolated build environment) from a copy of this checkout."""
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "s3memory", source / "s3memory", ignore=shutil.ignore_patterns("__pycache__", "*.py[co]")
    )
    out = tmp_path_factory.mktemp("wheel")
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)],
        cwd=out,
        timeout=PIP_TIMEOUT_SECONDS,
    )
    assert built.returncode == 0, _explain(built)
    wheels = list(out.glob("s3memory-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_metadata(wheel: Path) -> None:
    assert wheel.name == f"s3memory-{s3memory.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = f"s3memory-{s3memory.__version__}.dist-info"
        metadata = email.parser.Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode("utf-8"))
        license_text = archive.read(f"{dist_info}/licenses/LICENSE")
    assert license_text == (ROOT / "LICENSE").read_bytes()
    assert metadata["Version"] == s3memory.__version__
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert {"demo", "lambda", "mcp"} <= set(metadata.get_all("Provides-Extra") or [])
    demo_requirements = [r for r in metadata.get_all("Requires-Dist") or [] if 'extra == "demo"' in r]
    assert [r.split(";")[0] for r in demo_requirements] == [
        "anthropic>=0.69",
        "moto[s3]>=5.1",
        "flask>=3",
        "flask-cors>=4",
    ]
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or [])
    assert set(urls) == {"Homepage", "Documentation", "Changelog", "Issues"}
    assert all(url.startswith("https://github.com/s3memory/s3memory") for url in urls.values())
    assert "Typing :: Typed" in (metadata.get_all("Classifier") or [])
    # The whole package ships in the wheel, the demo and the testing module with it (the Lambda zip is
    # where they are left out), with the typing marker.
    packaged = {name for name in names if name.startswith("s3memory/")}
    assert packaged == package_sources()
    assert {"s3memory/demo/walkthrough.py", "s3memory/testing/fixtures.py", "s3memory/py.typed"} <= packaged


def package_sources() -> set[str]:
    """The package's ``*.py``, ``py.typed`` and data files (the look-alike table and its licence) in
    this checkout, by archive name."""
    return {
        path.relative_to(ROOT).as_posix()
        for pattern in ("*.py", "py.typed", "*.tsv", "*-license.txt")
        for path in (ROOT / "s3memory").rglob(pattern)
        if "__pycache__" not in path.parts
    }


def test_fresh_virtualenv_install_explains_the_demo_extra_then_runs_the_demo(
    wheel: Path, tmp_path: Path
) -> None:
    if importlib.util.find_spec("ensurepip") is None:
        pytest.skip("this Python has no ensurepip, so `python -m venv` cannot make a virtualenv with pip")
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    if made.returncode != 0 and "ensurepip" in made.stdout + made.stderr:
        pytest.skip(f"`python -m venv` cannot make a virtualenv with pip here: {made.stdout + made.stderr}")
    assert made.returncode == 0, _explain(made)
    scripts = venv / ("Scripts" if os.name == "nt" else "bin")
    python, command = str(scripts / "python"), str(scripts / "s3memory")
    pip = [python, "-m", "pip", "install", "--quiet", "--constraint", str(ROOT / "constraints.txt")]

    installed = _run([*pip, str(wheel)], cwd=tmp_path, timeout=PIP_TIMEOUT_SECONDS)
    assert installed.returncode == 0, _explain(installed)

    version = _run([command, "--version"], cwd=tmp_path)
    assert version.returncode == 0, _explain(version)
    assert version.stdout.strip() == f"s3memory {s3memory.__version__}"

    refused = _run([command, "demo"], cwd=tmp_path)
    assert refused.returncode == 2, _explain(refused)
    assert refused.stdout == ""
    assert "Traceback" not in refused.stderr
    assert [line for line in refused.stderr.splitlines() if line.strip()] == [
        f"s3memory demo needs the demo extra (missing: anthropic, moto[s3], flask, flask-cors): {HINT}"
    ]

    no_mcp = _run([command, "mcp", "--user", "alice"], cwd=tmp_path)
    assert (no_mcp.returncode, no_mcp.stdout, no_mcp.stderr) == (
        2,
        "",
        "s3memory mcp needs the mcp extra (missing: mcp): pip install -e '.[mcp]' in the s3memory checkout "
        "(or its wheel with [mcp])\n",
    ), _explain(no_mcp)

    with_demo = _run([*pip, f"{wheel}[demo]"], cwd=tmp_path, timeout=PIP_TIMEOUT_SECONDS)
    assert with_demo.returncode == 0, _explain(with_demo)
    # The demo extra brings moto's S3, not every AWS service's dependencies, nor the tests' tools.
    heavy = ["sympy", "cfnlint", "networkx", "docker", "mypy", "matplotlib", "pytest", "mcp"]
    found = _run(
        [python, "-c", f"import importlib.util as u; print([m for m in {heavy!r} if u.find_spec(m)])"],
        cwd=tmp_path,
    )
    assert (found.returncode, found.stdout.strip()) == (0, "[]"), _explain(found)

    ran = _run([command, "demo"], cwd=tmp_path)
    assert ran.returncode == 0, _explain(ran)
    assert "Traceback" not in ran.stderr
    second = ran.stdout[ran.stdout.index("=== Conversation 2") : ran.stdout.index("=== At rest")]
    for line in RECALLED:  # what conversation 1 stored, recalled in a fresh context
        assert line in second, _explain(ran)
    assert "any line of the plaintext in the stored bytes: no" in ran.stdout


# -- in this process ------------------------------------------------------------------------------


def _hide(monkeypatch: pytest.MonkeyPatch, *hidden: str) -> None:
    """The demo's requirement check finds ``hidden`` modules missing; importing the walk-through would fail."""
    real = importlib.util.find_spec
    monkeypatch.setattr(demo, "find_spec", lambda name: None if name in hidden else real(name))
    monkeypatch.setitem(sys.modules, "s3memory.demo.walkthrough", None)


def test_demo_without_anthropic_names_the_extra_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _hide(monkeypatch, "anthropic")
    assert cli.main(["demo"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"s3memory demo needs the demo extra (missing: anthropic): {HINT}\n"


def test_demo_without_the_moto_server_names_what_it_runs_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _hide(monkeypatch, "flask", "flask_cors")
    assert cli.main(["demo", "--live"]) == 2
    assert (
        capsys.readouterr().err
        == f"s3memory demo needs the demo extra (missing: flask, flask-cors): {HINT}\n"
    )


def test_missing_for_demo_with_everything_installed() -> None:
    assert demo.missing_for_demo() == []  # the dev environment has the demo extra


def test_version_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"s3memory {s3memory.__version__}\n"


def test_one_version_everywhere() -> None:
    from s3memory._version import __version__

    assert s3memory.__version__ == __version__
    assert f"## [{__version__}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and "s3memory._version.__version__" in pyproject


def test_license_is_the_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
