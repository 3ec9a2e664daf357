"""Races over real HTTP: many threads, one S3 server, one user's memory.

Each thread has its own tool and client, as concurrent Lambda invocations would. Each test runs on
moto's threaded server (its conditional writes made atomic by ``atomic_moto_writes``) and on
SeaweedFS, whose conditional writes are atomic on their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from s3memory.clients import make_s3_client
from s3memory.core.paths import memory_path
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT
from tests.support.backends import SeaweedServer
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW, temporary_bucket
from tests.support.faults import held

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)
THREADS = 16


@pytest.fixture
def endpoint(backend: str, request: pytest.FixtureRequest) -> str:
    """The URL of this test's S3 server (no bucket made)."""
    if backend == "seaweedfs":
        server: SeaweedServer = request.getfixturevalue("seaweedfs")
        return server.endpoint
    url: str = request.getfixturevalue("moto_endpoint")
    return url


@pytest.fixture
def new_memory(
    endpoint: str, backend: str, request: pytest.FixtureRequest
) -> Iterator[Callable[[], S3Memory]]:
    def build() -> S3Memory:
        client = make_s3_client(endpoint_url=endpoint, region_name="us-east-1")
        return S3Memory(
            Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=STORAGE_FORMAT
        )

    if backend == "seaweedfs":
        request.getfixturevalue("s3")  # the session's bucket, emptied before and after the test
        yield build
        return
    with temporary_bucket(make_s3_client(endpoint_url=endpoint, region_name="us-east-1")):
        yield build


def race(work: Callable[[int], str]) -> list[str]:
    """Start ``work`` on THREADS threads at once; each answer or refusal message, by thread."""
    barrier = threading.Barrier(THREADS)
    answers: list[str] = [""] * THREADS
    crashes: list[BaseException] = []

    def run(index: int) -> None:
        barrier.wait()
        try:
            answers[index] = work(index)
        except CommandError as error:
            answers[index] = error.message
        except BaseException as error:
            crashes.append(error)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert crashes == []
    return answers


def test_of_racing_creators_exactly_one_wins(new_memory: Callable[[], S3Memory]) -> None:
    tools = [new_memory() for _ in range(THREADS)]
    answers = race(
        lambda index: tools[index].run(
            {"command": "create", "path": "/memories/race.txt", "file_text": f"writer {index}"}
        )
    )
    winners = [index for index, answer in enumerate(answers) if answer.startswith("File created")]
    assert len(winners) == 1
    assert sorted(set(answers)) == sorted(
        {"File created successfully at: /memories/race.txt", "Error: File /memories/race.txt already exists"}
    )
    shown = new_memory().run({"command": "view", "path": "/memories/race.txt"})
    assert shown.endswith(f"     1\twriter {winners[0]}")


def test_no_acknowledged_insert_is_lost(new_memory: Callable[[], S3Memory]) -> None:
    new_memory().run({"command": "create", "path": "/memories/log.txt", "file_text": "start\n"})
    tools = [new_memory() for _ in range(THREADS)]
    answers = race(
        lambda index: tools[index].run(
            {
                "command": "insert",
                "path": "/memories/log.txt",
                "insert_line": 1,
                "insert_text": f"entry {index}",
            }
        )
    )
    assert answers == ["The file /memories/log.txt has been edited."] * THREADS
    shown = new_memory().run({"command": "view", "path": "/memories/log.txt"})
    lines = [row.split("\t", 1)[1] for row in shown.splitlines()[1:]]
    assert lines[0] == "start"
    assert sorted(lines[1:]) == sorted(f"entry {index}" for index in range(THREADS))


def test_no_acknowledged_str_replace_is_lost(new_memory: Callable[[], S3Memory]) -> None:
    text = "".join(f"slot {index}: empty\n" for index in range(THREADS))
    new_memory().run({"command": "create", "path": "/memories/slots.txt", "file_text": text})
    tools = [new_memory() for _ in range(THREADS)]
    answers = race(
        lambda index: tools[index].run(
            {
                "command": "str_replace",
                "path": "/memories/slots.txt",
                "old_str": f"slot {index}: empty",
                "new_str": f"slot {index}: taken by {index}",
            }
        )
    )
    assert all(answer.startswith("The memory file has been edited.") for answer in answers)
    shown = new_memory().run({"command": "view", "path": "/memories/slots.txt"})
    for index in range(THREADS):
        assert f"slot {index}: taken by {index}" in shown


def test_racing_replacements_of_the_same_text_apply_once(new_memory: Callable[[], S3Memory]) -> None:
    new_memory().run({"command": "create", "path": "/memories/one.txt", "file_text": "status: open\n"})
    tools = [new_memory() for _ in range(THREADS)]
    answers = race(
        lambda index: tools[index].run(
            {
                "command": "str_replace",
                "path": "/memories/one.txt",
                "old_str": "open",
                "new_str": f"closed by {index}",
            }
        )
    )
    winners = [
        index for index, answer in enumerate(answers) if answer.startswith("The memory file has been edited.")
    ]
    assert len(winners) == 1
    assert (
        answers.count(
            "No replacement was performed, old_str `open` did not appear verbatim in /memories/one.txt."
        )
        == THREADS - 1
    )
    assert (
        new_memory()
        .run({"command": "view", "path": "/memories/one.txt"})
        .endswith(f"     1\tstatus: closed by {winners[0]}")
    )


def test_the_store_passes_any_fault_as_a_clear_error(endpoint: str) -> None:
    client = make_s3_client(endpoint_url=endpoint, region_name="us-east-1")
    memory = S3Memory(
        Bucket(client, "no-such-bucket"), "alice", LocalKeyProvider(MASTER_KEY), storage_format=1
    )
    # Reads only: SeaweedFS makes a missing bucket for a PutObject.
    for command, operation in [
        ({"command": "view", "path": "/memories"}, "ListObjectsV2"),
        ({"command": "view", "path": "/memories/x.txt"}, "GetObject"),
        ({"command": "str_replace", "path": "/memories/x.txt", "old_str": "a", "new_str": "b"}, "GetObject"),
    ]:
        with pytest.raises(CommandError) as caught:
            memory.run(command)
        assert caught.value.message == (
            f"Error: S3 {operation} failed (NoSuchBucket): bucket no-such-bucket does not exist at "
            f"{client.meta.endpoint_url}. Check S3MEMORY_BUCKET (--bucket) and S3MEMORY_ENDPOINT_URL "
            "(--endpoint-url), or create the bucket. Nothing was done."
        )


def test_a_file_and_a_file_below_it_created_at_once_can_both_stay_and_each_stays_reachable(
    endpoint: str, new_memory: Callable[[], S3Memory]
) -> None:
    # docs/storage.md, "Creates at once": each create's checks answered before the other's write
    # landed, the one interleaving in which both stay (as it was when the checks went first)
    creators = [new_memory(), new_memory()]
    for memory in creators:
        memory.run({"command": "view", "path": "/memories"})  # the store found, what the server enforces
    paths = ["/memories/j", "/memories/j/x.md"]
    file_key = creators[0].placed.layout.file_key(memory_path(paths[0]))
    # the check of each that could see the other's write: below /memories/j, and /memories/j itself
    checks = [("ListObjectsV2", "Prefix", file_key + "/"), ("HeadObject", "Key", file_key)]
    checked = [threading.Event(), threading.Event()]
    holds = []
    for memory, path, check, done in zip(creators, paths, checks, checked, strict=True):
        client = memory.store.bucket.client
        holds.append(held(client, "PutObject", memory.placed.layout.file_key(memory_path(path))))
        answered(client, *check, done)
    answers = [""] * 2

    def create(index: int) -> None:
        try:
            answers[index] = creators[index].run(
                {"command": "create", "path": paths[index], "file_text": f"the text of {paths[index]}"}
            )
        except CommandError as refusal:
            answers[index] = refusal.message

    threads = [threading.Thread(target=create, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for (reached, _release), done in zip(holds, checked, strict=True):
        assert reached.wait(30) and done.wait(30)
    for (_reached, release), thread in zip(holds, threads, strict=True):
        release.set()  # the file first: SeaweedFS refuses a key where a directory is
        thread.join()
    assert answers == [f"File created successfully at: {path}" for path in paths]
    reader = new_memory()
    listing = reader.run({"command": "view", "path": "/memories"})
    assert listing.splitlines()[1:] == [
        "4.0K\t/memories",
        f"{len('the text of /memories/j')}B\t/memories/j",
        "4.0K\t/memories/j/",
        f"{len('the text of /memories/j/x.md')}B\t/memories/j/x.md",
    ]
    for path in paths:  # the file wins at its own path; the one below stays readable
        assert reader.run({"command": "view", "path": path}).endswith(f"     1\tthe text of {path}")
    assert reader.run({"command": "rename", "old_path": "/memories/j", "new_path": "/memories/j.md"}) == (
        "Successfully renamed /memories/j to /memories/j.md"
    )
    assert reader.run({"command": "view", "path": "/memories"}).splitlines()[1:] == [
        "4.0K\t/memories",
        "4.0K\t/memories/j/",
        f"{len('the text of /memories/j/x.md')}B\t/memories/j/x.md",
        f"{len('the text of /memories/j')}B\t/memories/j.md",
    ]


def answered(client: Any, operation: str, parameter: str, value: str, done: threading.Event) -> None:
    """Set ``done`` once ``client``'s ``operation`` with ``parameter`` equal to ``value`` has answered."""

    def mark(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if params.get(parameter) == value:
            context["watched"] = True

    def answer(context: dict[str, Any], **_: Any) -> None:
        if context.get("watched"):
            done.set()

    client.meta.events.register(f"before-parameter-build.s3.{operation}", mark)
    client.meta.events.register(f"after-call.s3.{operation}", answer)
