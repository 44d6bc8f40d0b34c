"""The package version, in one place (the package's face re-exports it; saved artifacts record it)."""

__version__ = "0.1.0"
