"""What an operator does to the memory in a store, as one API (``Operations``): list its users and
their files (``inventory``), verify (``verify``), erase (``erase``), move a user's memory to and
from a folder (``transfer``), and keep a folder the same as it (``sync``); each task in its own
module over the store they share (``context``).
The ``s3memory`` command is a thin layer over this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from s3memory.assembly import make_store
from s3memory.crypto import KeyProvider
from s3memory.ops.erase import EraseTask
from s3memory.ops.inventory import InventoryTask
from s3memory.ops.sync import SyncTask
from s3memory.ops.transfer import TransferTask
from s3memory.ops.verify import VerifyTask
from s3memory.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class Operations(VerifyTask, EraseTask, TransferTask, SyncTask, InventoryTask):
    """The memory of every user in one store (bucket and prefix, in its storage format), for an
    operator."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, actor: str | None = None) -> Operations:
        """Built from the ``S3MEMORY_*`` settings of ``environ`` (this process's when not given), as
        the command line builds them."""
        return cls.from_settings(Settings.from_env(environ), actor=actor)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        s3_client: S3Client | None = None,
        *,
        key_provider: KeyProvider | None = None,
        actor: str | None = None,
    ) -> Operations:
        """Built from the same settings as the Lambda handlers (``S3MEMORY_*``): the store
        (``assembly.make_store``) and the limits (``key_provider``: one already built from them,
        to share its cache)."""
        return cls.over(make_store(settings, s3_client, key_provider), limits=settings.limits, actor=actor)
