"""Section 1: each command's S3 and KMS requests, and its wall time against the floor.

The floor of a command is the bare boto3 requests it minimally needs, sent one after another by
the same client, on objects of the same size, in the same run. Each repetition measures the
command and its floor back to back, alternating which goes first; the ratio is taken per pair.
Each arm's client CPU is measured with it (``time.process_time``: every thread of the bench
process; the S3 server is another process). ``create`` is also set against one conditional PUT
(issue 42: a create at the price of a write), measured in the same rotation.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .metrics import RequestCounter, Summary, describe, paired_ratios, plain, timed_cpu
from .servers import REGION, Backend, plain_client
from .tables import table
from .workload import Tenant, note_text, s3memory_client

BUCKET = "bench-commands"
FLOOR = "floor/"
TIME_TARGET = 1.15
TIME_TARGETS = ("view file", "create", "str_replace")
CPU_TARGET = 1.3
"""A command's client CPU at most this much of its floor's (``CPU_TARGETS``)."""
CPU_TARGETS = ("view file", "str_replace")
WRITE_TIME_TARGET = 1.35
"""``create`` at most this much of one conditional PUT's time where a round trip is added (issue 42)."""
WRITE_CPU_TARGET = 2.0
"""``create``'s client CPU at most this much of one conditional PUT's (issue 42)."""
ONE_PUT = "PUT IfNoneMatch"
"""What ``create`` is also set against: one conditional write of the same size, by the same client."""
# README budgets, each within the (view /memories and view dir ≤ 2).
BUDGETS = {
    "view file": 1,
    "view dir": 2,
    "view /memories": 1,
    "create": 3,
    "str_replace": 2,
    "insert": 2,
    "delete file": 3,
    "rename file": 6,
}


@dataclass
class CommandResult:
    backend: str
    command: str
    floor: str
    requests: int
    requests_max: int
    breakdown: str
    budget: int
    seconds: Summary
    floor_seconds: Summary
    ratio: Summary
    cpu: Summary
    """The client's CPU per command (``time.process_time``)."""
    floor_cpu: Summary
    cpu_ratio: Summary
    """Client CPU, command / floor, per pair."""
    write: WriteComparison | None = None
    """``create`` against one conditional PUT (None for the other commands)."""
    kms_s3_requests: int | None = None
    kms_requests_warm: int | None = None
    samples: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "command": self.command,
            "floor": self.floor,
            "requests": self.requests,
            "requests_max": self.requests_max,
            "breakdown": self.breakdown,
            "budget": self.budget,
            "seconds": self.seconds.as_dict(),
            "floor_seconds": self.floor_seconds.as_dict(),
            "ratio": self.ratio.as_dict(),
            "cpu": self.cpu.as_dict(),
            "floor_cpu": self.floor_cpu.as_dict(),
            "cpu_ratio": self.cpu_ratio.as_dict(),
            "write": plain(self.write.__dict__) if self.write else None,
            "kms_s3_requests": self.kms_s3_requests,
            "kms_requests_warm": self.kms_requests_warm,
        }


@dataclass(frozen=True)
class WriteComparison:
    """``create`` against one conditional PUT of the same size by the same client, per triple of
    the rotation: its time and client CPU, and the ratios of the command's to them."""

    seconds: Summary
    cpu: Summary
    ratio: Summary
    cpu_ratio: Summary


@dataclass
class KmsColdStart:
    """KMS and S3 requests of a first command: for a new user, and in a new process."""

    new_user_kms: str
    new_user_s3: str
    new_process_kms: str
    new_process_s3: str


@dataclass
class Case:
    """One command: untimed preparation, the command, its floor, and the floor's description."""

    name: str
    floor_text: str
    prepare: Callable[[int], None]
    command: Callable[[int], object]
    floor: Callable[[int], object]
    cleanup: Callable[[], None]
    one_write: Callable[[int], object] | None = None
    """One conditional PUT, measured in the same rotation (``create`` only)."""


def _seed_tree(tenant: Tenant) -> dict[str, str]:
    files = {"/memories/preferences.md": note_text(1, 30)}
    for index, name in enumerate("abcde"):
        files[f"/memories/notes/{name}.md"] = note_text(10 + index)
    files["/memories/notes/edit-s.md"] = "counter: 0\n" + note_text(20)
    files["/memories/notes/edit-i.md"] = note_text(21)
    files["/memories/projects/alpha/readme.md"] = note_text(30)
    files["/memories/projects/beta/plan.md"] = note_text(31)
    files["/memories/archive/keep.md"] = note_text(40, 5)
    files["/memories/scratch/keep.md"] = note_text(41, 5)
    tenant.seed(files)
    return files


def build_cases(tenant: Tenant, with_floor: bool = True) -> list[Case]:
    """The eight cases on ``tenant`` (seeded by the caller with ``_seed_tree``)."""
    client = tenant.client
    bucket = tenant.bucket
    backend = tenant.backend
    sizes = {
        name: len(tenant.sealed(path, text)[1])
        for name, (path, text) in {
            "note": ("/memories/notes/a.md", note_text(10)),
            "new": ("/memories/notes/new.md", note_text(50)),
        }.items()
    }
    user = tenant.user_id

    def floor_key(name: str) -> str:
        return f"{FLOOR}{user}/{name}"

    def nothing(_: int) -> None:
        return None

    def get(key: str) -> tuple[bytes, str]:
        response = client.get_object(Bucket=bucket, Key=key)
        return response["Body"].read(), response["ETag"]

    def clear_created(paths: list[str]) -> Callable[[], None]:
        def clear() -> None:
            keys = [tenant.key(path) for path in paths]
            keys += backend.keys(bucket, f"{FLOOR}{user}/")
            for start in range(0, len(keys), 1000):
                batch = keys[start : start + 1000]
                backend.admin.delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True}
                )
            paths.clear()

        return clear

    created: list[str] = []
    view_file_key = tenant.key("/memories/notes/a.md")
    notes_prefix = tenant.prefix("/memories/notes")
    root_prefix = tenant.prefix("/memories")

    def list_prefix(prefix: str) -> object:
        return client.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1000)

    # create
    def create(r: int) -> object:
        path = f"/memories/notes/new-{r}.md"
        created.append(path)
        return tenant.run({"command": "create", "path": path, "file_text": note_text(50)})

    def create_floor(r: int) -> object:
        key = floor_key(f"new-{r}.md")
        client.put_object(Bucket=bucket, Key=key, Body=b"n" * sizes["new"], IfNoneMatch="*")
        return client.list_objects_v2(Bucket=bucket, Prefix=key + "/", MaxKeys=1)

    def one_put(r: int) -> object:
        key = floor_key(f"put-{r}.md")
        return client.put_object(Bucket=bucket, Key=key, Body=b"n" * sizes["new"], IfNoneMatch="*")

    # str_replace / insert: floors edit an object of the same size with IfMatch
    def prepare_edit_floor(name: str, path: str) -> Callable[[int], None]:
        def prepare(r: int) -> None:
            if r == 0 or not backend.keys(bucket, floor_key(name)):
                body = client.get_object(Bucket=bucket, Key=tenant.key(path))["Body"].read()
                backend.admin.put_object(Bucket=bucket, Key=floor_key(name), Body=body)

        return prepare

    def edit_floor(name: str) -> Callable[[int], object]:
        def floor(_: int) -> object:
            body, etag = get(floor_key(name))
            return client.put_object(Bucket=bucket, Key=floor_key(name), Body=body, IfMatch=etag)

        return floor

    replace_count = [0]

    def str_replace(_: int) -> object:
        n = replace_count[0]
        replace_count[0] += 1
        return tenant.run(
            {
                "command": "str_replace",
                "path": "/memories/notes/edit-s.md",
                "old_str": f"counter: {n}\n",
                "new_str": f"counter: {n + 1}\n",
            }
        )

    def insert(r: int) -> object:
        return tenant.run(
            {
                "command": "insert",
                "path": "/memories/notes/edit-i.md",
                "insert_line": 1,
                "insert_text": f"inserted line {r}",
            }
        )

    # delete / rename of a file: each repetition gets a fresh file and a fresh floor object
    def prepare_scratch(kind: str) -> Callable[[int], None]:
        def prepare(r: int) -> None:
            path = f"/memories/scratch/{kind}-{r}.md"
            created.append(path)
            key, body, metadata = tenant.sealed(path, note_text(60 + r % 7))
            backend.seed(bucket, [(key, body, metadata), (floor_key(f"{kind}-{r}.md"), b"s" * len(body), {})])

        return prepare

    def delete(r: int) -> object:
        return tenant.run({"command": "delete", "path": f"/memories/scratch/del-{r}.md"})

    def delete_floor(r: int) -> object:
        return client.delete_object(Bucket=bucket, Key=floor_key(f"del-{r}.md"))

    def rename(r: int) -> object:
        created.append(f"/memories/archive/ren-{r}.md")
        return tenant.run(
            {
                "command": "rename",
                "old_path": f"/memories/scratch/ren-{r}.md",
                "new_path": f"/memories/archive/ren-{r}.md",
            }
        )

    def rename_floor(r: int) -> object:
        body, _ = get(floor_key(f"ren-{r}.md"))
        client.put_object(Bucket=bucket, Key=floor_key(f"moved/ren-{r}.md"), Body=body, IfNoneMatch="*")
        return client.delete_object(Bucket=bucket, Key=floor_key(f"ren-{r}.md"))

    clear = clear_created(created)
    return [
        Case(
            "view file",
            "GET",
            nothing,
            lambda r: tenant.run({"command": "view", "path": "/memories/notes/a.md"}),
            lambda r: get(view_file_key),
            clear,
        ),
        Case(
            "view dir",
            "LIST",
            nothing,
            lambda r: tenant.run({"command": "view", "path": "/memories/notes"}),
            lambda r: list_prefix(notes_prefix),
            clear,
        ),
        Case(
            "view /memories",
            "LIST",
            nothing,
            lambda r: tenant.run({"command": "view", "path": "/memories"}),
            lambda r: list_prefix(root_prefix),
            clear,
        ),
        Case("create", "PUT IfNoneMatch + LIST", nothing, create, create_floor, clear, one_put),
        Case(
            "str_replace",
            "GET + PUT IfMatch",
            prepare_edit_floor("edit-s", "/memories/notes/edit-s.md"),
            str_replace,
            edit_floor("edit-s"),
            clear,
        ),
        Case(
            "insert",
            "GET + PUT IfMatch",
            prepare_edit_floor("edit-i", "/memories/notes/edit-i.md"),
            insert,
            edit_floor("edit-i"),
            clear,
        ),
        Case("delete file", "DELETE", prepare_scratch("del"), delete, delete_floor, clear),
        Case(
            "rename file",
            "GET + PUT IfNoneMatch + DELETE",
            prepare_scratch("ren"),
            rename,
            rename_floor,
            clear,
        ),
    ]


def _measure_case(case: Case, counter: RequestCounter, reps: int, warmup: int) -> dict[str, Any]:
    """``reps`` rotations of the command, its floor and (``create``) one conditional PUT, after
    ``warmup`` unmeasured: each arm's time and CPU, the command's requests."""
    arms: dict[str, Callable[[int], object]] = {"command": case.command, "floor": case.floor}
    if case.one_write is not None:
        arms["write"] = case.one_write
    seconds: dict[str, list[float]] = {name: [] for name in arms}
    cpu: dict[str, list[float]] = {name: [] for name in arms}
    counts: list[int] = []
    last: Counter[str] = Counter()
    names = list(arms)
    for index in range(warmup + reps):
        case.prepare(index)
        turn = index % len(names)
        for name in names[turn:] + names[:turn]:  # each arm goes first in turn
            if name == "command":
                with counter.window() as seen:
                    wall, spent = timed_cpu(lambda index=index: case.command(index))
            else:
                wall, spent = timed_cpu(lambda index=index, name=name: arms[name](index))
            if index >= warmup:
                seconds[name].append(wall)
                cpu[name].append(spent)
        if index >= warmup:
            counts.append(sum(seen.values()))
            last = Counter(seen)
    case.cleanup()
    return {"seconds": seconds, "cpu": cpu, "counts": counts, "last": last}


def run(backend: Backend, reps: int, warmup: int = 3) -> list[CommandResult]:
    """Every case on ``backend``: ``reps`` measured pairs after ``warmup`` unmeasured ones."""
    backend.create_bucket(BUCKET)
    client = s3memory_client(backend)
    counter = RequestCounter(client)
    tenant = Tenant(backend, client, BUCKET, "alice")
    tenant.clear()
    _seed_tree(tenant)
    results = []
    for case in build_cases(tenant):
        measured = _measure_case(case, counter, reps, warmup)
        counts = sorted(measured["counts"])
        seconds, cpu = measured["seconds"], measured["cpu"]
        results.append(
            CommandResult(
                backend=backend.name,
                command=case.name,
                floor=case.floor_text,
                requests=counts[len(counts) // 2],
                requests_max=counts[-1],
                breakdown=describe(measured["last"]),
                budget=BUDGETS[case.name],
                seconds=Summary.of(seconds["command"]),
                floor_seconds=Summary.of(seconds["floor"]),
                ratio=paired_ratios(seconds["command"], seconds["floor"]),
                cpu=Summary.of(cpu["command"]),
                floor_cpu=Summary.of(cpu["floor"]),
                cpu_ratio=paired_ratios(cpu["command"], cpu["floor"]),
                write=_write_comparison(seconds, cpu),
                samples={"command": seconds["command"], "floor": seconds["floor"]},
            )
        )
    tenant.clear()
    return results


def _write_comparison(seconds: dict[str, list[float]], cpu: dict[str, list[float]]) -> WriteComparison | None:
    """The command against one conditional PUT, where that arm was measured."""
    if "write" not in seconds:
        return None
    return WriteComparison(
        Summary.of(seconds["write"]),
        Summary.of(cpu["write"]),
        paired_ratios(seconds["command"], seconds["write"]),
        paired_ratios(cpu["command"], cpu["write"]),
    )


def run_kms(backend: Backend, results: list[CommandResult]) -> KmsColdStart | None:
    """Request counts with KMS envelope keys (moto's KMS): cold, then every command warm."""
    if not backend.has_kms:
        return None
    from s3memory.crypto import KMSKeyProvider

    kms_admin = plain_client(backend.endpoint_url, "kms")
    key_id = kms_admin.create_key(Description="s3memory bench")["KeyMetadata"]["KeyId"]

    from s3memory.clients import make_kms_client

    kms = make_kms_client(endpoint_url=backend.endpoint_url, region_name=REGION)
    kms_counter = RequestCounter(kms)
    client = s3memory_client(backend)
    s3_counter = RequestCounter(client)
    user = "carol-kms"
    provider = KMSKeyProvider(key_id, kms_client=kms)
    tenant = Tenant(backend, client, BUCKET, user, key_provider=provider)
    tenant.clear()
    backend.clear(BUCKET, tenant.memory.placed.layout.namespace)

    def first_command(t: Tenant) -> tuple[Counter[str], Counter[str]]:
        with s3_counter.window() as s3_seen, kms_counter.window() as kms_seen:
            t.run({"command": "create", "path": "/memories/first.md", "file_text": "hello\n"})
        return Counter(s3_seen), Counter(kms_seen)

    new_user_s3, new_user_kms = first_command(tenant)
    # A new process: a fresh provider (empty key cache) for the same user.
    fresh = Tenant(backend, client, BUCKET, user, key_provider=KMSKeyProvider(key_id, kms_client=kms))
    with s3_counter.window() as s3_seen, kms_counter.window() as kms_seen:
        fresh.run({"command": "view", "path": "/memories/first.md"})
    new_process_s3, new_process_kms = Counter(s3_seen), Counter(kms_seen)
    fresh.run({"command": "delete", "path": "/memories/first.md"})

    # Warm commands: seed through the product (KMS-sealed), then one round of every case.
    files = {
        "/memories/preferences.md": note_text(1, 30),
        **{f"/memories/notes/{name}.md": note_text(10 + i) for i, name in enumerate("abcde")},
        "/memories/notes/edit-s.md": "counter: 0\n" + note_text(20),
        "/memories/notes/edit-i.md": note_text(21),
        "/memories/projects/alpha/readme.md": note_text(30),
        "/memories/projects/beta/plan.md": note_text(31),
        "/memories/archive/keep.md": note_text(40, 5),
        "/memories/scratch/keep.md": note_text(41, 5),
    }
    for path, text in files.items():
        tenant.run({"command": "create", "path": path, "file_text": text})
    by_name = {result.command: result for result in results if result.backend == backend.name}
    for case in build_cases(tenant):
        if case.name in ("delete file", "rename file"):
            index = 0
            path = f"/memories/scratch/{'del' if case.name == 'delete file' else 'ren'}-{index}.md"
            tenant.run({"command": "create", "path": path, "file_text": note_text(60)})
        with s3_counter.window() as s3_seen, kms_counter.window() as kms_seen:
            case.command(0)
        if case.name in by_name:
            by_name[case.name].kms_s3_requests = sum(s3_seen.values())
            by_name[case.name].kms_requests_warm = sum(kms_seen.values())
    tenant.clear()
    return KmsColdStart(
        new_user_kms=describe(new_user_kms),
        new_user_s3=describe(new_user_s3),
        new_process_kms=describe(new_process_kms),
        new_process_s3=describe(new_process_s3),
    )


def per_command_lines(commands: list[CommandResult], kms: dict[str, KmsColdStart]) -> list[str]:
    """Section 1 of ``latest.md``: requests per command (local and KMS keys), then time against the floor."""
    out = [
        "## 1. Per command",
        "",
        "Requests of each command on a warm tool (one user, a small tree), with a local master key and with "
        "KMS envelope keys (moto's KMS). The budget column is the issue's target.",
        "",
    ]
    first_backend = commands[0].backend if commands else ""
    rows = []
    for command in commands:
        if command.backend != first_backend:
            continue
        rows.append(
            [
                command.command,
                str(command.requests),
                command.breakdown,
                f"≤ {command.budget}",
                "\u2013" if command.kms_s3_requests is None else str(command.kms_s3_requests),
                "\u2013" if command.kms_requests_warm is None else str(command.kms_requests_warm),
            ]
        )
    out += table(
        ["command", "S3 requests", "which", "budget", "S3 requests (KMS keys)", "KMS requests (warm)"], rows
    )
    for backend, cold in kms.items():
        out += [
            f"KMS on {backend}: the first command for a **new user** (a create) sends {cold.new_user_kms} and "
            f"S3 {cold.new_user_s3}, of which a GET and a PUT (IfNoneMatch) are the wrapped key object. The "
            f"first command of a **new process** for an existing user (a view) sends {cold.new_process_kms} and "
            f"S3 {cold.new_process_s3} (the file and the wrapped key). Warm commands send no KMS request.",
            "",
        ]
    out += [
        "Wall time against the **floor**: the bare boto3 requests the command minimally needs, sent by the same "
        "client on objects of the same size, measured back to back with the command; the client's CPU of "
        "each (`time.process_time`, every thread of the bench process; the server is another process). "
        f"`create` is also set against one `{ONE_PUT}` of the same size (issue 42), in the same rotation.",
        "",
    ]
    by_backend: dict[str, list[CommandResult]] = defaultdict(list)
    for command in commands:
        by_backend[command.backend].append(command)
    for backend, measured in by_backend.items():
        out += [f"**{backend}** ({measured[0].seconds.n} pairs per command)", ""]
        rows = []
        for c in measured:
            against = [(c.floor, c.floor_seconds, c.ratio, c.floor_cpu, c.cpu_ratio)]
            if c.write is not None:
                w = c.write
                against.append((f"one {ONE_PUT}", w.seconds, w.ratio, w.cpu, w.cpu_ratio))
            for floor, floor_seconds, ratio, floor_cpu, cpu_ratio in against:
                times = [c.seconds.ms(), floor_seconds.ms(), ratio.ratio()]
                rows.append([c.command, floor, *times, c.cpu.ms(2), floor_cpu.ms(2), cpu_ratio.ratio()])
        out += table(
            [
                "command",
                "floor",
                "s3memory ms",
                "floor ms",
                "s3memory / floor",
                "client CPU ms",
                "floor's CPU ms",
                "CPU / floor",
            ],
            rows,
        )
    return out
