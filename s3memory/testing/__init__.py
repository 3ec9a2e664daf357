"""For the tests of applications that use s3memory, offline: no AWS account, no API key
(``docs/testing.md``).

With ``pytest_plugins = ["s3memory.testing"]`` in a ``conftest.py``, a test takes the fixtures of
:mod:`s3memory.testing.fixtures`: ``s3memory_bucket`` (a new bucket on moto, started for the test,
refusing what S3 refuses: a :class:`MotoBucket`), ``s3memory_bucket_as_shipped`` (the same on moto
as shipped) and ``scripted_claude`` (a :class:`ScriptedClaude` that the real SDK's ``tool_runner``
talks to, playing the turns the test wrote: :func:`memory_call`, :func:`reply`).

moto as shipped ignores the conditions of CopyObject, which storage format 2 relies on, and the
per-key ETags of DeleteObjects, so on it s3memory serves format 1 and deletes key by key
(``docs/servers.md``): the contract holds either way. Outside the fixtures, ``with
conditions_honoured(): ...`` makes moto check those conditions as S3 does.

Needs moto and ``anthropic`` (the ``demo`` extra). Importing this package imports neither, nor
pytest: the fixtures are in :mod:`s3memory.testing.fixtures`, which pytest loads with this plugin,
and ``anthropic`` is imported when a client or a tool is built.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from s3memory.testing.offline import MotoBucket
from s3memory.testing.script import Reply, ToolResult, Turn, last_tool_results, memory_call, reply
from s3memory.testing.scripted_claude import ScriptedClaude

__all__ = [
    "MotoBucket",
    "Reply",
    "ScriptedClaude",
    "ToolResult",
    "Turn",
    "conditions_honoured",
    "honour_conditions",
    "install_condition_checks",
    "last_tool_results",
    "memory_call",
    "reply",
]
pytest_plugins = ["s3memory.testing.fixtures"]
"""The fixtures, for applications that name this module as a plugin."""

_INSTALLED = "_s3memory_checks_conditions"
"""Set on moto's ``S3Response`` once ``install_condition_checks`` has wrapped its handlers."""
_honouring = 0
"""How many ``conditions_honoured`` blocks are open (and ``honour_conditions`` calls made): moto
checks the conditions while any is."""
_honouring_lock = threading.Lock()
_PRECONDITION_MESSAGE = "At least one of the pre-conditions you specified did not hold"


@contextlib.contextmanager
def conditions_honoured() -> Iterator[None]:
    """While the block runs, moto refuses what S3 refuses (``honour_conditions``); afterwards moto
    is as shipped again (unless another block is still open)."""
    global _honouring
    install_condition_checks()
    with _honouring_lock:
        _honouring += 1
    try:
        yield
    finally:
        with _honouring_lock:
            _honouring -= 1


def honour_conditions() -> None:
    """Make moto refuse what S3 refuses for the rest of this process; doing it again changes nothing
    more.

    moto (5.2) copies regardless of ``If-None-Match``, ``If-Match`` and
    ``x-amz-copy-source-if-match`` on CopyObject, and deletes the keys of a ``DeleteObjects``
    whatever ETag each names. S3 enforces both; s3memory's storage format 2 relies on the first (a
    conditional copy must never land over a newer object), so on moto as shipped s3memory serves
    format 1 and deletes key by key (``docs/servers.md``). With this, moto's ``copy_object`` first
    checks the copy's conditions, with moto's own errors: 412 PreconditionFailed if ``If-None-Match:
    *`` finds an object at the destination, if ``If-Match`` names another ETag than the
    destination's, or if the source's ETag is not the one ``x-amz-copy-source-if-match`` names; 404
    NoSuchKey for ``If-Match`` on a missing destination, as moto's PutObject answers (a missing
    source is left to moto: NoSuchKey before any condition, as S3 answers). And a ``DeleteObjects``
    keeps each key whose ETag is not the one it names, reporting it ``PreconditionFailed``, as S3
    does. Applies to every moto in this process: ``mock_aws`` and its servers alike. The embedded
    S3 of ``s3memory demo`` uses it.
    """
    global _honouring
    install_condition_checks()
    with _honouring_lock:
        _honouring += 1


def install_condition_checks() -> None:
    """Wrap moto's ``copy_object`` and ``DeleteObjects`` handlers once, to check their conditions
    while honouring is on (before anything else wraps them, so that a lock around a handler holds
    the check and the write together)."""
    from moto.s3.responses import S3Response

    with _honouring_lock:
        if getattr(S3Response, _INSTALLED, False):
            return
        copy: Callable[[Any], Any] = S3Response.copy_object
        delete_keys: Callable[..., Any] = S3Response._bucket_response_delete_keys

        def copy_object(self: Any) -> Any:
            if _honouring:
                _refuse_unmet_copy_conditions(self)
            return copy(self)

        def bucket_response_delete_keys(self: Any, bucket_name: str, *args: Any, **kwargs: Any) -> Any:
            if _honouring:
                return _delete_keys_whose_etags_hold(
                    self, bucket_name, lambda: delete_keys(self, bucket_name, *args, **kwargs)
                )
            return delete_keys(self, bucket_name, *args, **kwargs)

        S3Response.copy_object = copy_object  # type: ignore[method-assign]
        S3Response._bucket_response_delete_keys = bucket_response_delete_keys  # type: ignore[method-assign]
        setattr(S3Response, _INSTALLED, True)


def _delete_keys_whose_etags_hold(request: Any, bucket_name: str, delete: Callable[[], Any]) -> Any:
    """Run moto's ``DeleteObjects`` ``delete`` on the keys of ``request`` whose named ETag (if any) is
    their object's, and answer ``PreconditionFailed`` for the others, as S3 does."""
    import xmltodict  # type: ignore[import-untyped]
    from moto.core.responses import ActionResult

    body = xmltodict.parse(request.body, strip_whitespace=False)
    objects = body["Delete"].get("Object", [])
    objects = objects if isinstance(objects, list) else [objects]
    refused = [item for item in objects if _etag_unmet(request.backend, bucket_name, item)]
    if not refused:
        return delete()
    errors = [
        {"Key": item["Key"], "Code": "PreconditionFailed", "Message": _PRECONDITION_MESSAGE}
        for item in refused
    ]
    kept = [item for item in objects if item not in refused]
    if not kept:
        request.data["Action"] = "DeleteObjects"
        return request.serialized(ActionResult({"Deleted": [], "Errors": errors}))
    body["Delete"]["Object"] = kept
    request.body = xmltodict.unparse(body).encode("utf-8")
    serialized = request.serialized

    def with_refusals(result: Any) -> Any:
        result.result["Errors"].extend(errors)
        return serialized(result)

    request.serialized = with_refusals
    return delete()


def _etag_unmet(backend: Any, bucket_name: str, item: dict[str, Any]) -> bool:
    """True if ``item`` (an ``<Object>`` of a ``DeleteObjects``) names an ETag its object has not."""
    etag = item.get("ETag")
    if etag is None:
        return False
    found = backend.get_object(bucket_name, item["Key"], version_id=item.get("VersionId"))
    return found is not None and not _same_etag(etag, found.etag)


def _same_etag(one: str, other: str) -> bool:
    return one.replace('"', "") == other.replace('"', "")


def _refuse_unmet_copy_conditions(request: Any) -> None:
    """Raise moto's error for the first condition of this CopyObject ``request`` (moto's
    ``S3Response``) that does not hold; the source is parsed as moto's ``copy_object`` does."""
    from moto.s3.exceptions import MissingKey, PreconditionFailed

    headers = request.headers
    copy_source = headers.get("x-amz-copy-source")
    if isinstance(copy_source, bytes):
        copy_source = copy_source.decode("utf-8")
    parsed = urlparse(copy_source)
    source_bucket, source_key = unquote(parsed.path).lstrip("/").split("/", 1)
    version_id = parse_qs(parsed.query).get("versionId", [None])[0]
    source = request.backend.get_object(source_bucket, source_key, version_id=version_id)
    if source is None:
        return
    source_if_match = headers.get("x-amz-copy-source-if-match")
    if source_if_match and not _same_etag(source_if_match, source.etag):
        raise PreconditionFailed("x-amz-copy-source-If-Match")
    key = request.parse_key_name()
    target = request.backend.get_object(request.bucket_name, key)
    if headers.get("If-None-Match") == "*" and target is not None:
        raise PreconditionFailed("If-None-Match")
    if_match = headers.get("If-Match")
    if if_match:
        if target is None:
            raise MissingKey(key=key)
        if not _same_etag(if_match, target.etag):
            raise PreconditionFailed("If-Match")
