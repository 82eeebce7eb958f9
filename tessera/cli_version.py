"""The installed Tessera version (``tessera --version``, the OpenAPI document's ``info.version``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def tessera_version() -> str:
    """The version of the installed ``tessera`` distribution; ``0+unknown`` in a bare checkout."""
    try:
        return version("tessera")
    except PackageNotFoundError:
        return "0+unknown"
