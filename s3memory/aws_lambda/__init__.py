"""AWS Lambda entry points. Handler string: ``s3memory.aws_lambda.memory_handler``.

Importing this package does not import ``anthropic``: the memory function serves the core only.
"""

from __future__ import annotations

from .memory import memory_handler

__all__ = ["memory_handler"]
