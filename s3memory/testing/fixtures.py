"""The pytest fixtures of :mod:`s3memory.testing`, which loads this module as a plugin
(``docs/testing.md``).

Apart from it so that ``import s3memory.testing`` (the demo's, the benchmark's) needs no pytest.
Each fixture changes the environment for its test alone (``monkeypatch``): a test never reaches
AWS or the Anthropic API, and never sends the user's own credentials, not even to moto.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import warnings
from collections.abc import Iterator, Mapping

import pytest

from s3memory.testing import conditions_honoured
from s3memory.testing.offline import REGION, MotoBucket, loopback_unproxied, offline_aws_environment
from s3memory.testing.scripted_claude import ScriptedClaude

__all__ = [
    "moto_honouring_conditions",
    "s3memory_bucket",
    "s3memory_bucket_as_shipped",
    "scripted_claude",
]

_MOTO_MISSING = (
    "the s3memory_bucket fixtures need moto's S3: pip install 'moto[s3]' (or s3memory's demo extra)"
)


@pytest.fixture
def s3memory_bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoBucket]:
    """A new bucket on moto, started in this process for the test, that refuses what S3 refuses
    (``conditions_honoured``; s3memory serves storage format 2 on it). Dummy AWS credentials and
    ``S3MEMORY_BUCKET``/``S3MEMORY_LOCAL_KEY`` naming the bucket, for the test only."""
    with _moto_bucket(monkeypatch) as bucket, conditions_honoured():
        yield bucket


@pytest.fixture
def s3memory_bucket_as_shipped(monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoBucket]:
    """The same on moto as shipped, which ignores CopyObject's conditions: s3memory finds that out
    and serves format 1 on it, deleting key by key (``docs/servers.md``)."""
    with _moto_bucket(monkeypatch) as bucket:
        yield bucket


@pytest.fixture
def scripted_claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedClaude]:
    """A scripted stand-in for Claude on 127.0.0.1, with no turn yet (``play`` adds them); for the
    test, ``anthropic.Anthropic()`` built without arguments reaches it with a dummy key."""
    with ScriptedClaude() as claude:
        _apply(monkeypatch, {**claude.environment(), **loopback_unproxied(os.environ)})
        yield claude


@pytest.fixture
def moto_honouring_conditions() -> Iterator[None]:
    """Deprecated: it starts no moto (used alone, a test reaches for AWS and fails with
    ``NoCredentialsError``). Use ``s3memory_bucket``, or ``conditions_honoured()`` inside your own
    ``mock_aws()``. moto refuses what S3 refuses for the test; afterwards moto is as shipped."""
    warnings.warn(
        "the fixture moto_honouring_conditions starts no moto: use s3memory_bucket (moto started, "
        "dummy credentials, a bucket made), or conditions_honoured() inside your own mock_aws()",
        DeprecationWarning,
        stacklevel=2,
    )
    with conditions_honoured():
        yield


@contextlib.contextmanager
def _moto_bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoBucket]:
    """moto for one test, with a new bucket: the environment offline first, s3memory's clients and
    what the process learned of stores forgotten before and after (a client or store built earlier
    may hold other credentials, or know another bucket of the same name)."""
    try:
        from moto import mock_aws
    except ImportError as error:
        raise RuntimeError(_MOTO_MISSING) from error
    from s3memory import clients
    from s3memory.store import forget_stores

    _apply(monkeypatch, offline_aws_environment(os.environ))
    monkeypatch.setattr(clients, "_sessions", {})
    forget_stores()
    try:
        with mock_aws():
            bucket = MotoBucket(
                name=f"s3memory-test-{secrets.token_hex(6)}",
                client=clients.make_s3_client(region_name=REGION),
                master_key=secrets.token_bytes(32),
            )
            bucket.client.create_bucket(Bucket=bucket.name)
            _apply(monkeypatch, bucket.environment(os.environ))
            yield bucket
    finally:
        forget_stores()


def _apply(monkeypatch: pytest.MonkeyPatch, changes: Mapping[str, str | None]) -> None:
    """Set each variable for the test; ``None`` removes it."""
    for name, value in changes.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
