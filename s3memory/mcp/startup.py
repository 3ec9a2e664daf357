"""``s3memory mcp``'s start-up check: whether its settings can serve at all, before a client is told
that the server connected (``--no-check`` skips it, for a start offline).

At most two requests, each of one attempt that connects and reads within ``clients.CHECK_SECONDS``,
and neither writes, creates or probes anything:

- a one-key ``ListObjectsV2`` of the store's prefix, which needs only ``s3:ListBucket`` on the prefix
  (granted to every role of the Terraform module): a missing bucket, an endpoint out of reach, no or
  refused credentials, a bucket in another region;
- with a KMS key, a ``GenerateDataKey`` dry run with the store key's encryption context, which needs
  only the grant every key user has (``KMSKeyProvider.check``): a missing, disabled or denied key, no
  region. A local master key was checked when the settings were read.

The reason is the message the first command would have met, naming the setting and the fix
(``storage.diagnosis.misconfigured``, the KMS provider's), never a key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from s3memory.assembly import make_s3_client, make_store
from s3memory.errors import StorageError

if TYPE_CHECKING:
    from s3memory.settings import Settings


def unusable(settings: Settings) -> str | None:
    """Why ``settings`` cannot serve, in one line; None when the bucket and the key answer."""
    store = make_store(settings, make_s3_client(settings, quick=True))
    try:
        store.bucket.any_below(store.prefix)
        store.key_provider.check(store.identity)
    except StorageError as error:
        return error.message
    return None
