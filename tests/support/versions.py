"""What a bucket holds, read straight from S3: the objects below a prefix, every version and delete
marker, the key version each object's header names; and a user's history of edits to list."""

from __future__ import annotations

from typing import Any

from s3memory.crypto import sealed_version
from s3memory.ops.operations import Operations


def objects(s3: Any, bucket: str, prefix: str) -> list[str]:
    """The key of each current object below ``prefix``."""
    return [
        item["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        for item in page.get("Contents", [])
    ]


def sealed_with(s3: Any, bucket: str, prefix: str) -> dict[str, int | None]:
    """The key version each object below ``prefix`` names in its header."""
    return {
        key: sealed_version(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        for key in objects(s3, bucket, prefix)
    }


def all_versions(s3: Any, bucket: str, prefix: str) -> list[tuple[str, str]]:
    """Every S3 version and delete marker below ``prefix`` (key, version id)."""
    found: list[tuple[str, str]] = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Versions", []) + page.get("DeleteMarkers", []):
            found.append((item["Key"], item["VersionId"]))
    return sorted(found)


def everything(s3: Any, bucket: str) -> dict[tuple[str, str], bytes | None]:
    """Every version of every object with its bytes, and every delete marker: proof that nothing changed."""
    found: dict[tuple[str, str], bytes | None] = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for item in page.get("Versions", []):
            body = s3.get_object(Bucket=bucket, Key=item["Key"], VersionId=item["VersionId"])["Body"].read()
            found[(item["Key"], item["VersionId"])] = body
        for item in page.get("DeleteMarkers", []):
            found[(item["Key"], item["VersionId"])] = None
    return found


def history_for(operations: Operations, user: str) -> None:
    """Files written, edited, deleted and renamed: versions and delete markers."""
    memory = operations.memory(user)
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})
    memory.run({"command": "create", "path": "/memories/d/b.md", "file_text": "b\n"})
    memory.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    memory.run({"command": "delete", "path": "/memories/a.md"})
