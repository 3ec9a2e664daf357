"""Section 4: cold start, a new process serving its first command, against bare boto3.

Each sample is a new interpreter (the bench's own) started by this process, timed from spawn to
exit. The s3memory child imports ``s3memory.aws_lambda`` (the Lambda entry point) when it exists,
else ``s3memory`` and ``s3memory.memory``, and serves ``view /memories`` with a local key, in
storage format 2 set explicitly (as the Terraform module sets it: no format to find); the
baseline child imports ``boto3`` and sends the same bare LIST. Both read byte-code from one warm
``PYTHONPYCACHEPREFIX`` (filled by an unmeasured run of each), so neither pays for compiling.
Samples alternate between the two children. Each child leaves with ``os._exit`` once it has
printed its answer: a Lambda container is frozen after it answers, not torn down, so the
interpreter's teardown (a full collection of every object, which differs between the two) is no
part of a cold start.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from s3memory.crypto import FORMAT_2

from .metrics import Summary, paired_ratios
from .servers import REPO, Backend
from .tables import table
from .workload import MASTER_KEY, PRIVATE_PREFIX, Tenant, note_text, s3memory_client

BUCKET = "bench-coldstart"
USER = "cold"

S3MEMORY_CHILD = r"""
import json, os, sys, time
started = time.perf_counter()
try:
    import s3memory.aws_lambda as entry
    mode = "aws_lambda"
except ImportError:
    entry = None
    mode = "core"
if entry is not None:
    answer = entry.memory_handler({"user_id": os.environ["BENCH_USER"], "input": {"command": "view", "path": "/memories"}}, None)
    text, failed = answer["content"], answer["is_error"]
else:
    import base64, s3memory
    from s3memory.clients import make_s3_client
    from s3memory.crypto import LocalKeyProvider
    from s3memory.memory import S3Memory
    from s3memory.storage.bucket import Bucket
    client = make_s3_client(endpoint_url=os.environ["S3MEMORY_ENDPOINT_URL"])
    memory = S3Memory(Bucket(client, os.environ["S3MEMORY_BUCKET"]), os.environ["BENCH_USER"],
                      LocalKeyProvider(base64.b64decode(os.environ["S3MEMORY_LOCAL_KEY"])),
                      prefix=os.environ["S3MEMORY_PREFIX"],
                      storage_format=int(os.environ["S3MEMORY_STORAGE_FORMAT"]))
    text, failed = memory.run({"command": "view", "path": "/memories"}), False
imported = time.perf_counter()
print(json.dumps({"mode": mode, "seconds": imported - started, "failed": failed, "chars": len(text),
                  "modules": len(sys.modules)}), flush=True)
os._exit(0)
"""

BOTO3_CHILD = r"""
import json, os, sys, time
started = time.perf_counter()
import boto3
client = boto3.client("s3", endpoint_url=os.environ["S3MEMORY_ENDPOINT_URL"])
response = client.list_objects_v2(Bucket=os.environ["S3MEMORY_BUCKET"], Prefix=os.environ["BENCH_MEMORIES"])
print(json.dumps({"mode": "boto3", "seconds": time.perf_counter() - started, "failed": False,
                  "chars": len(response.get("Contents", [])), "modules": len(sys.modules)}), flush=True)
os._exit(0)
"""


@dataclass
class ColdStart:
    backend: str
    entry: str
    s3memory_process: Summary
    boto3_process: Summary
    ratio: Summary
    s3memory_in_process: Summary
    boto3_in_process: Summary
    s3memory_modules: int
    boto3_modules: int
    import_anthropic: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            key: value.as_dict() if isinstance(value, Summary) else value
            for key, value in self.__dict__.items()
        }


def child_environment(settings: dict[str, str], cache: str) -> dict[str, str]:
    """A child's environment: this process's without its ``S3MEMORY_*`` settings, ``PYTHONPATH`` and
    ``PYTHONDONTWRITEBYTECODE``, with ``settings`` and byte-code read from (and written to) ``cache``."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("S3MEMORY_", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH"))
    }
    return {**environment, **settings, "PYTHONPYCACHEPREFIX": cache}


def store_settings(backend: Backend, bucket: str) -> dict[str, str]:
    """The ``S3MEMORY_*`` settings of a format-2 store in ``bucket`` on ``backend`` with the bench's
    local key (at ``PRIVATE_PREFIX``, where the bench's format-2 tenants live)."""
    return {
        "S3MEMORY_BUCKET": bucket,
        "S3MEMORY_PREFIX": PRIVATE_PREFIX,
        "S3MEMORY_STORAGE_FORMAT": str(FORMAT_2),
        "S3MEMORY_LOCAL_KEY": base64.b64encode(MASTER_KEY).decode(),
        "S3MEMORY_ENDPOINT_URL": backend.endpoint_url,
    }


def _environment(backend: Backend, cache: str, memories: str) -> dict[str, str]:
    """The children's environment: the store's settings, and ``memories``, the key prefix of the
    user's ``/memories`` that the baseline lists."""
    settings = {**store_settings(backend, BUCKET), "BENCH_USER": USER, "BENCH_MEMORIES": memories}
    return child_environment(settings, cache)


def spawn(
    code: str, environment: dict[str, str], enter: Callable[[list[str]], list[str]] | None = None
) -> tuple[float, dict[str, Any]]:
    """Runs ``python -c code`` (inside what ``enter`` wraps the command in, if given: a CPU quota
    group's ``argv``); the seconds from spawn to exit and the last line it printed (JSON, whose
    ``failed`` must be false)."""
    command = [sys.executable, "-c", code]
    started = time.perf_counter()
    finished = subprocess.run(
        enter(command) if enter else command,
        env=environment,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if finished.returncode != 0:
        raise RuntimeError(f"cold-start child failed: {finished.stderr.strip()[-2000:]}")
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    if report["failed"]:
        raise RuntimeError(f"cold-start child answered an error ({report})")
    return elapsed, report


def run(backend: Backend, reps: int) -> ColdStart:
    backend.create_bucket(BUCKET)
    tenant = Tenant(backend, s3memory_client(backend), BUCKET, USER, storage_format=FORMAT_2)
    tenant.clear()
    tenant.seed({f"/memories/notes/n-{i}.md": note_text(i, 10) for i in range(20)})
    with tempfile.TemporaryDirectory(prefix="s3memory-bench-pycache-") as cache:
        environment = _environment(backend, cache, tenant.prefix("/memories"))
        for code in (S3MEMORY_CHILD, BOTO3_CHILD, S3MEMORY_CHILD, BOTO3_CHILD):
            spawn(code, environment)  # fills the byte-code cache and the page cache
        samples: dict[str, list[float]] = {"s3memory": [], "boto3": []}
        inside: dict[str, list[float]] = {"s3memory": [], "boto3": []}
        reports: dict[str, dict[str, Any]] = {}
        for rep in range(reps):
            order = [("s3memory", S3MEMORY_CHILD), ("boto3", BOTO3_CHILD)]
            for name, code in order if rep % 2 == 0 else order[::-1]:
                elapsed, report = spawn(code, environment)
                samples[name].append(elapsed)
                inside[name].append(report["seconds"])
                reports[name] = report
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, s3memory.aws_lambda; print('anthropic' in sys.modules)"
                if reports["s3memory"]["mode"] == "aws_lambda"
                else "import sys, s3memory, s3memory.memory; print('anthropic' in sys.modules)",
            ],
            env={**environment, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=False,
        )
    tenant.clear()
    return ColdStart(
        backend=backend.name,
        entry="s3memory.aws_lambda.memory_handler"
        if reports["s3memory"]["mode"] == "aws_lambda"
        else "s3memory + s3memory.memory",
        s3memory_process=Summary.of(samples["s3memory"]),
        boto3_process=Summary.of(samples["boto3"]),
        ratio=paired_ratios(samples["s3memory"], samples["boto3"]),
        s3memory_in_process=Summary.of(inside["s3memory"]),
        boto3_in_process=Summary.of(inside["boto3"]),
        s3memory_modules=int(reports["s3memory"]["modules"]),
        boto3_modules=int(reports["boto3"]["modules"]),
        import_anthropic=probe.stdout.strip() == "True",
    )


def coldstart_lines(cold: ColdStart | None) -> list[str]:
    """Section 4 of ``latest.md``: a new interpreter's first command against bare boto3's."""
    out = ["## 4. Cold start", ""]
    if cold is None:
        out += ["Not measured in this run.", ""]
    else:
        out += [
            f"A new interpreter serving its first command (`view /memories`, local key) through `{cold.entry}`, "
            "against one importing boto3 and sending the same bare LIST; spawn to exit, alternating, "
            f"{cold.ratio.n} of each. `anthropic` imported by the s3memory process: {cold.import_anthropic}.",
            "",
        ]
        out += table(
            ["process", "spawn to exit s", "import + first command s", "modules loaded"],
            [
                [
                    "s3memory",
                    cold.s3memory_process.seconds(3),
                    cold.s3memory_in_process.seconds(3),
                    str(cold.s3memory_modules),
                ],
                [
                    "boto3 + LIST",
                    cold.boto3_process.seconds(3),
                    cold.boto3_in_process.seconds(3),
                    str(cold.boto3_modules),
                ],
            ],
        )
        out += [f"Ratio s3memory / boto3 (spawn to exit, per pair): **{cold.ratio.ratio()}**.", ""]
    return out
