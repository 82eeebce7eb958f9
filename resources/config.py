"""The configuration file as a resource: the one way assets read tessera.yaml."""

import os
from functools import lru_cache
from pathlib import Path

from dagster import ConfigurableResource

from tessera.config import TesseraConfig, load_config, parse_config

BUNDLED_CONFIG = str(Path(__file__).resolve().parents[1] / "examples" / "tessera.yaml")
"""The bundled example, by absolute path: definitions load from any working directory."""


@lru_cache(maxsize=16)
def _parsed(path: str, cwd: str, text: str) -> TesseraConfig:
    return parse_config(text, Path(path))


def load_cached(path: str) -> TesseraConfig:
    """The parsed configuration, parsed again only when the file's bytes changed.

    A sensor tick or a run builds one context per tenant; parsing and validating the file for
    each of them made a tick O(T²) in the number of tenants. The file is still read every
    time, so a change is never missed whatever the clock's granularity; only the parse is
    shared. The parsed config is a frozen dataclass, so sharing it is safe."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return load_config(path)  # the typed ConfigError, naming the file
    return _parsed(path, os.getcwd(), text)


class TesseraConfigResource(ConfigurableResource):  # type: ignore[type-arg]
    """Path to ``tessera.yaml``; defaults to ``$TESSERA_CONFIG`` or the bundled example."""

    config_path: str = os.environ.get("TESSERA_CONFIG", BUNDLED_CONFIG)

    def load(self) -> TesseraConfig:
        return load_cached(self.config_path)
