"""The package version, in one place: ``pyproject.toml`` reads it at build time (setuptools ``attr``),
and the code reads it at run time, so it is right where no distribution metadata exists (the Lambda zip)."""

__version__ = "0.2.0"
