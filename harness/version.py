"""The project's version (also in pyproject.toml), importable from any layer."""

__version__ = "0.1.0"
