"""Private names (storage format 2) leave no names behind: a session of all six commands, through
``S3Memory`` and through the memory Lambda, writes no user id, path segment, file name, author or
file content into any object key or version, metadata, tag, KMS encryption context or log line (every
logger, at DEBUG: botocore's show each request). The same search over a format-1 session finds them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from s3memory.aws_lambda import memory_handler, runtime
from s3memory.core.paths import SharedName
from s3memory.crypto import KMSKeyProvider, LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.mounts import READ_WRITE, Mount, MountedMemory
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY, SEAWEEDFS_SLOW
from tests.support.issuer import Issuer, http_event, loopback_issuer
from tests.support.records import invocation_records

BACKENDS = ("moto", SEAWEEDFS_SLOW)
USER = "jane.doe@example.com"
ACTOR = "agent-zeta"
CLIENTS = "/memories/clients_quorx"


def tool(command: str, **fields: Any) -> dict[str, Any]:
    return {"command": command, **fields}


DEEP = f"{CLIENTS}/deep_vault/inner_sanctum/nested_note.md"
SESSION = [
    tool("create", path=f"{CLIENTS}/acme_acquisition.md", file_text="Acme pays sapphire-ledger\n"),
    tool("create", path=f"{CLIENTS}/zürich_plän.txt", file_text="Grüezi Matterhorn-Kodex\n"),
    tool("create", path=f"{CLIENTS}/.secret_moonbeam", file_text="vault-combination-8812\n"),
    tool("create", path=DEEP, file_text="owl-feather\n"),
    tool("create", path="/memories/scratch_pad_qq.md", file_text="ephemeral-walrus\n"),
    tool("create", path="/memories/tmp_dir_wobble/junk_wobble.txt", file_text="gone-tomorrow-kiwi\n"),
    tool("str_replace", path=f"{CLIENTS}/acme_acquisition.md", old_str="sapphire", new_str="indigo-clause"),
    tool("insert", path=f"{CLIENTS}/zürich_plän.txt", insert_line=1, insert_text="Fondue-Lenzburg\n"),
    tool("view", path="/memories"),
    tool("view", path=CLIENTS),
    tool("view", path=f"{CLIENTS}/acme_acquisition.md"),
    tool("delete", path="/memories/scratch_pad_qq.md"),
    tool("delete", path="/memories/tmp_dir_wobble"),
    tool("rename", old_path=f"{CLIENTS}/acme_acquisition.md", new_path=f"{CLIENTS}/acme_merger_final.md"),
    tool("rename", old_path=f"{CLIENTS}/deep_vault", new_path="/memories/archive_xylophone"),
    tool("view", path="/memories"),
    tool("view", path="/memories/archive_xylophone/inner_sanctum/nested_note.md"),
]
REFUSED = [  # refusals log nothing either
    tool("view", path=f"{CLIENTS}/phantom_orchid.md"),
    tool("str_replace", path=f"{CLIENTS}/zürich_plän.txt", old_str="no-such-walnut", new_str="unwritten-yak"),
]
FINAL_ROOT = [
    "/memories",
    "/memories/archive_xylophone/",
    "/memories/archive_xylophone/inner_sanctum/",
    f"{CLIENTS}/",
    f"{CLIENTS}/acme_merger_final.md",
    f"{CLIENTS}/zürich_plän.txt",
]


def values(*fields: str) -> set[str]:
    return {command[field] for command in SESSION + REFUSED for field in fields if field in command}


SEGMENTS = {part for path in values("path", "old_path", "new_path") for part in path.split("/")} - {
    "",
    "memories",
}
TEXTS = {
    line for text in values("file_text", "old_str", "new_str", "insert_text") for line in text.splitlines()
}
STEMS = {segment.lstrip(".").rsplit(".", 1)[0] for segment in SEGMENTS}
NEEDLES = sorted({USER, USER.split("@")[0], ACTOR, *SEGMENTS, *STEMS, *TEXTS})
CONTEXT = SimpleNamespace(aws_request_id="req-private-names")


def forms(needle: str) -> set[str]:
    """How a name may be written in a key, a URL, a log line or a repr, lowercased."""
    escaped = (json.dumps(needle)[1:-1], str(needle.encode("utf-8"))[2:-1])
    return {form.lower() for form in (needle, quote(needle, safe=""), quote_plus(needle), *escaped)}


def leaks(captured: dict[str, list[str]], needles: list[str] = NEEDLES) -> list[str]:
    """Each needle found in each kind of capture, with where it was: empty when nothing shows."""
    found = []
    for where, texts in captured.items():
        text = "\n".join(texts).lower()
        for needle in needles:
            for form in sorted(forms(needle)):
                at = text.find(form)
                if at >= 0:
                    found.append(f"{where}: {needle!r} in ...{text[max(0, at - 60) : at + 60]!r}...")
                    break
    return found


def encryption_contexts(kms: Any) -> list[tuple[str, dict[str, str]]]:
    """Each KMS request's operation and encryption context, as ``kms`` sends them from now on."""
    contexts: list[tuple[str, dict[str, str]]] = []

    def note(params: dict[str, Any], model: Any, **_: Any) -> None:
        if "EncryptionContext" in params:
            contexts.append((model.name, dict(params["EncryptionContext"])))

    kms.meta.events.register("before-parameter-build.kms.*", note)
    return contexts


@pytest.fixture
def contexts(kms: Any, backend: str, caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, str]]]:
    """The KMS requests' encryption contexts (``encryption_contexts``), every log line captured; on
    moto only (its KMS: one backend is enough)."""
    if backend != "moto":
        pytest.skip("moto's KMS: one backend is enough")
    caplog.set_level(logging.DEBUG)
    return encryption_contexts(kms)


def captured(
    s3: Any, bucket: str, caplog: pytest.LogCaptureFixture, versions: bool = False
) -> dict[str, list[str]]:
    """Every key (and version), metadata key and value, tag, body and log line the session left."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    plain = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
    logs = [  # the session's, before this function's own requests
        formatter.format(entry) + " " + repr({k: v for k, v in vars(entry).items() if k not in plain})
        for entry in caplog.records
    ]
    objects: list[tuple[str, str | None]] = []
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        objects += [(item["Key"], None) for item in page.get("Contents", [])]
    if versions:
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            objects += [(item["Key"], item["VersionId"]) for item in page.get("Versions", [])]
            keys += [item["Key"] for item in page.get("DeleteMarkers", [])]
    metadata: list[str] = []
    tags: list[str] = []
    bodies: list[str] = []
    for key, version in objects:
        keys.append(key)
        which = {"Bucket": bucket, "Key": key, **({"VersionId": version} if version else {})}
        head = s3.head_object(**which)
        metadata += [f"{name}={value}" for name, value in head["Metadata"].items()]
        metadata.append(str(head.get("ContentType")))
        tags += [f"{tag['Key']}={tag['Value']}" for tag in s3.get_object_tagging(**which)["TagSet"]]
        bodies.append(s3.get_object(**which)["Body"].read().decode("latin-1"))
    return {"keys": keys, "metadata": metadata, "tags": tags, "bodies": bodies, "logs": logs}


def counts(found: dict[str, list[str]]) -> str:
    return ", ".join(f"{len(texts)} {where}" for where, texts in found.items())


def check_answers(answers: list[str]) -> None:
    """The session did what it says: the names come back decrypted, sorted, the hidden file unshown;
    then the refusals refused."""
    answers, refusals = answers[: len(SESSION)], answers[len(SESSION) :]
    assert all(not answer.startswith("Error") for answer in answers), answers
    assert "phantom_orchid.md does not exist" in refusals[0] and "no-such-walnut" in refusals[1], refusals
    rows = [line.split("\t")[1] for line in answers[-2].splitlines()[1:]]
    assert rows == FINAL_ROOT, answers[-2]
    assert "owl-feather" in answers[-1] and "indigo-clause" in answers[10]
    assert ".secret_moonbeam" not in answers[9] and "zürich_plän.txt" in answers[9]


def run_session(memory: S3Memory) -> list[str]:
    answers = [memory.run(command) for command in SESSION]
    for command in REFUSED:
        with pytest.raises(CommandError) as refused:
            memory.run(command)
        answers.append(refused.value.message)
    return answers


def test_a_format_2_session_leaves_no_names(
    s3: Any, versioned: str, caplog: pytest.LogCaptureFixture, local_keys: LocalKeyProvider
) -> None:
    caplog.set_level(logging.DEBUG)
    memory = S3Memory(Bucket(s3, versioned), USER, local_keys, storage_format=2, actor=ACTOR)
    check_answers(run_session(memory))
    found = captured(s3, versioned, caplog, versions=True)
    assert len(found["keys"]) > len(FINAL_ROOT) and found["metadata"] and len(found["logs"]) > 100
    assert leaks(found) == [], counts(found)


@pytest.fixture
def function_env(s3: Any, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Issuer]:
    """The memory function on this test's bucket with the default settings, trusting a loopback
    issuer too: format 2, as the default (``auto``) serves a new store."""
    names = (
        "PREFIX",
        "KMS_KEY_ID",
        "STORE_ID",
        "STORAGE_FORMAT",
        "JWT_SCOPES",
        "QUOTA_BYTES",
        "QUOTA_FILES",
        "GUARD",
    )
    for name in names:
        monkeypatch.delenv(f"S3MEMORY_{name}", raising=False)
    monkeypatch.setenv("S3MEMORY_BUCKET", BUCKET)
    monkeypatch.setenv("S3MEMORY_LOCAL_KEY", LOCAL_KEY_B64)
    if backend == "seaweedfs":
        monkeypatch.setenv("S3MEMORY_ENDPOINT_URL", s3.meta.endpoint_url)
    runtime.reset()
    with loopback_issuer() as issuer:
        for name, value in issuer.environ(S3MEMORY_DIRECT_INVOCATION="allow").items():
            monkeypatch.setenv(name, value)
        yield issuer
    runtime.reset()


def test_the_memory_function_in_format_2_leaves_no_names(
    s3: Any, function_env: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answers = []
    for number, command in enumerate(SESSION + REFUSED):  # direct and HTTP events by turns
        if number % 2:
            event = http_event({"input": command, "actor": ACTOR}, token=function_env.token(USER))
            response = memory_handler(event, CONTEXT)
            assert response["statusCode"] == 200
            answer = json.loads(response["body"])
        else:
            answer = memory_handler({"user_id": USER, "input": command, "actor": ACTOR}, CONTEXT)
        answers.append(answer["content"])
    check_answers(answers)
    outcomes = [record["outcome"] for record in invocation_records(caplog, "memory")]
    assert outcomes == ["ok"] * len(SESSION) + ["error"] * len(REFUSED)
    found = captured(s3, BUCKET, caplog)
    assert not any(key.startswith("users/jane") for key in found["keys"])
    assert leaks(found) == [], counts(found)


def test_kms_encryption_contexts_name_the_user_by_token_only(
    s3: Any,
    kms: Any,
    key_id: str,
    contexts: list[tuple[str, dict[str, str]]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = S3Memory(Bucket(s3, BUCKET), USER, KMSKeyProvider(key_id, kms), storage_format=2, actor=ACTOR)
    check_answers(run_session(memory))
    cold = S3Memory(Bucket(s3, BUCKET), USER, KMSKeyProvider(key_id, kms), storage_format=2)  # unwraps
    assert "owl-feather" in cold.run(SESSION[-1])
    assert {operation for operation, _ in contexts} == {"GenerateDataKey", "Decrypt"}
    token = memory.placed.key_owner.namespace
    for _, context in contexts:
        assert set(context) == {"s3memory:store", "s3memory:user", "s3memory:key_version"}, context
        assert context["s3memory:user"] in ("store-key", "server-record", token), context
    found = captured(s3, BUCKET, caplog)
    found["contexts"] = [repr(context) for _, context in contexts]
    assert leaks(found) == [], counts(found)


SHARED = "team-quorx-vault"


def test_a_shared_memory_session_leaves_no_names(
    s3: Any, versioned: str, caplog: pytest.LogCaptureFixture, local_keys: LocalKeyProvider
) -> None:
    caplog.set_level(logging.DEBUG)
    memory = S3Memory(Bucket(s3, versioned), SharedName(SHARED), local_keys, storage_format=2, actor=ACTOR)
    check_answers(run_session(memory))
    found = captured(s3, versioned, caplog, versions=True)
    assert len(found["keys"]) > len(FINAL_ROOT) and found["metadata"] and len(found["logs"]) > 100
    assert leaks(found, [*NEEDLES, SHARED, "quorx-vault"]) == [], counts(found)


def test_a_session_through_a_read_write_mount_leaves_no_names_and_kms_sees_the_shared_token(
    s3: Any,
    kms: Any,
    key_id: str,
    contexts: list[tuple[str, dict[str, str]]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    own = S3Memory(Bucket(s3, BUCKET), USER, KMSKeyProvider(key_id, kms), storage_format=2, actor=ACTOR)
    mounted = MountedMemory(own, [Mount("/memories/team", SHARED, READ_WRITE)])
    team = f"/memories/team/{CLIENTS.rsplit('/', 1)[1]}"
    for command in [
        tool("create", path=f"{team}/acme_acquisition.md", file_text="Acme pays sapphire-ledger\n"),
        tool("str_replace", path=f"{team}/acme_acquisition.md", old_str="sapphire", new_str="indigo-clause"),
        tool("rename", old_path=f"{team}/acme_acquisition.md", new_path=f"{team}/acme_merger_final.md"),
        tool("view", path="/memories/team"),
    ]:
        answer = mounted.run(command)
    assert answer.endswith(f"{team}/acme_merger_final.md"), answer
    token = own.shared(SharedName(SHARED), writes=True).placed.key_owner.namespace
    assert token is not None and token != own.placed.key_owner.namespace
    assert {context["s3memory:user"] for _, context in contexts} >= {token}
    found = captured(s3, BUCKET, caplog)
    found["contexts"] = [repr(context) for _, context in contexts]
    assert leaks(found, [*NEEDLES, SHARED, "quorx-vault", f"shared/{SHARED}"]) == [], counts(found)


def test_the_search_finds_the_names_a_format_1_session_writes(
    s3: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    memory = S3Memory(Bucket(s3, BUCKET), USER, LocalKeyProvider(MASTER_KEY), storage_format=1, actor=ACTOR)
    check_answers(run_session(memory))
    found = leaks(captured(s3, BUCKET, caplog))
    for where, needle in [
        ("keys", USER),
        ("keys", "acme_merger_final.md"),
        ("keys", "zürich_plän.txt"),
        ("metadata", ACTOR),
        ("logs", USER),
        ("logs", "archive_xylophone"),
    ]:
        assert any(line.startswith(f"{where}: {needle!r}") for line in found), (where, needle, found)
