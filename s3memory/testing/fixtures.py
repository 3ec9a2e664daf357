"""The pytest fixture of :mod:`s3memory.testing`, which loads this module as a plugin.

Apart from it so that ``import s3memory.testing`` (the demo's, the benchmark's) needs no pytest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from s3memory.testing import conditions_honoured

__all__ = ["moto_honouring_conditions"]


@pytest.fixture
def moto_honouring_conditions() -> Iterator[None]:
    """moto refuses what S3 refuses for the test (``mock_aws`` and moto's servers in this process
    alike); afterwards moto is as shipped."""
    with conditions_honoured():
        yield
