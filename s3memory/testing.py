"""For the tests of applications that use s3memory: moto that refuses what S3 refuses.

moto as shipped ignores the conditions of CopyObject, which storage format 2 relies on, and the
per-key ETags of DeleteObjects, so on it s3memory serves format 1 and deletes key by key
(``docs/servers.md``): the contract holds either way. To test an application on format 2 with moto,
make moto check those conditions as S3 does::

    # conftest.py
    pytest_plugins = ["s3memory.testing"]

    def test_something(moto_honouring_conditions, ...): ...

or, outside pytest, ``with conditions_honoured(): ...``. Needs moto (the ``demo`` extra).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .local_s3 import conditions_honoured

__all__ = ["conditions_honoured", "moto_honouring_conditions"]


@pytest.fixture
def moto_honouring_conditions() -> Iterator[None]:
    """moto refuses what S3 refuses for the test (``mock_aws`` and moto's servers in this process
    alike); afterwards moto is as shipped."""
    with conditions_honoured():
        yield
