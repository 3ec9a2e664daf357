"""``s3memory demo`` and what serves it: Claude's memory tool on S3, end to end, offline.

- :mod:`.walkthrough`: the demo's conversations and the look at the bucket (``demo_main``);
- :mod:`.team`: its third conversation, a team's shared memory mounted read-only;
- :mod:`.local_s3`: ``s3memory local-s3``, moto's S3 server on loopback (``s3memory.testing.embedded_s3``,
  the tests' too) for operators, guarded (:mod:`.guarded_s3`), with the settings to reach it.

They need the ``demo`` extra, which the core does not; the Lambda zip holds none of them. Importing
this package is light: it only names what the demo needs beyond the core (:func:`missing_for_demo`).
The scripted stand-in for Claude that plays the demo's conversations is public, for applications'
tests: :class:`s3memory.testing.ScriptedClaude`.
"""

from __future__ import annotations

from importlib.util import find_spec

DEMO_MODULES = {
    "anthropic": "anthropic",
    "moto": "moto[s3]",
    "flask": "flask",
    "flask_cors": "flask-cors",
}
"""What ``s3memory demo`` imports beyond the core, by top-level module, with the requirement of the
``demo`` extra that provides it: the SDK's tool runner, and moto's threaded S3 server (Flask)."""

DEMO_INSTALL_HINT = "pip install -e '.[demo]' in the s3memory checkout (or its wheel with [demo])"
LOCAL_S3_BUCKET = "s3memory-local"
LOCAL_S3_ENV_FILE = "s3memory-local.env"
"""``s3memory local-s3``'s bucket and the file its settings go to, unless told (``local_s3``)."""


def missing_for_demo() -> list[str]:
    """The requirements of the ``demo`` extra whose modules cannot be found, without importing any."""
    missing: list[str] = []
    for module, requirement in DEMO_MODULES.items():
        if requirement not in missing and find_spec(module) is None:
            missing.append(requirement)
    return missing
