"""A server that cuts listings short and shows a common prefix again, as one client sees it.

``ShortListings`` wraps one botocore client (botocore event hooks on that client alone): every
ListObjectsV2 it sends is still one request to the same server (moto's in-process S3, which a
test's other clients see unchanged), so a request counter on the client counts each listing; only
the answer is reshaped, within what S3 allows:

- a page holds at most ``page`` entries (keys and common prefixes together), whatever MaxKeys
  asks for: S3 may return fewer than MaxKeys, and then says the listing is truncated;
- a delimited listing resumed with StartAfter inside a common prefix that still holds keys after
  it shows that prefix again, first (AWS does; moto leaves it out);
- continuation tokens are this wrapper's own (a token resumes after the last entry of its page).
"""

from __future__ import annotations

from typing import Any

import boto3

_TOKEN = "short-listing:"


class ShortListings:
    """``client``'s listings as a server that cuts them to ``page`` entries a page answers them."""

    def __init__(self, client: Any, page: int) -> None:
        assert page >= 1, page
        self.page = page
        self.asked: list[dict[str, Any]] = []
        """The parameters of each listing asked for, as the client sent them, in order."""
        self.repeated: list[str] = []
        """The common prefixes shown again, in the order they were."""
        self._names = boto3.client(  # uncounted: asks the server what lies after a StartAfter
            "s3", region_name=client.meta.region_name, endpoint_url=client.meta.endpoint_url
        )
        self._events = client.meta.events
        self._events.register("before-parameter-build.s3.ListObjectsV2", self._asked)
        self._events.register("after-call.s3.ListObjectsV2", self._answered)

    def __enter__(self) -> ShortListings:
        return self

    def __exit__(self, *_: object) -> None:
        """The client lists as its server does again."""
        self._events.unregister("before-parameter-build.s3.ListObjectsV2", self._asked)
        self._events.unregister("after-call.s3.ListObjectsV2", self._answered)

    def _asked(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        self.asked.append(dict(params))
        size = min(int(params.get("MaxKeys", 1_000)), self.page)
        token = params.pop("ContinuationToken", None)
        if token is not None:  # resumed after the last entry of the page before: nothing repeats
            assert str(token).startswith(_TOKEN), token
            params["StartAfter"] = str(token)[len(_TOKEN) :]
            again = None
        else:
            again = self._prefix_around(params)
        params["MaxKeys"] = size
        context["short_listing"] = (size, again)

    def _prefix_around(self, params: dict[str, Any]) -> str | None:
        """The common prefix a delimited listing's StartAfter lies inside, if keys after it remain."""
        delimiter, start = params.get("Delimiter"), params.get("StartAfter")
        prefix = params.get("Prefix", "")
        if not delimiter or start is None or not start.startswith(prefix):
            return None
        name, cut, rest = start[len(prefix) :].partition(delimiter)
        if not (cut and rest):
            return None
        group = f"{prefix}{name}{delimiter}"
        after = self._names.list_objects_v2(
            Bucket=params["Bucket"], Prefix=group, StartAfter=start, MaxKeys=1
        )
        return group if after.get("KeyCount", 0) else None

    def _answered(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if "Error" in parsed:
            return
        size, again = context["short_listing"]
        entries: list[tuple[str, dict[str, Any]]] = sorted(
            [(item["Key"], item) for item in parsed.get("Contents", [])]
            + [(item["Prefix"], item) for item in parsed.get("CommonPrefixes", [])],
            key=lambda entry: entry[0],
        )
        if again is not None:
            self.repeated.append(again)
            entries.insert(0, (again, {"Prefix": again}))
        truncated = bool(parsed.get("IsTruncated")) or len(entries) > size
        entries = entries[:size]
        parsed["Contents"] = [item for _name, item in entries if "Key" in item]
        parsed["CommonPrefixes"] = [item for _name, item in entries if "Key" not in item]
        parsed["KeyCount"] = len(entries)
        parsed["IsTruncated"] = truncated
        parsed.pop("NextContinuationToken", None)
        if truncated:
            parsed["NextContinuationToken"] = _TOKEN + entries[-1][0]
