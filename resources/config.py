"""The configuration file as a resource: the one way assets read tessera.yaml."""

import os

from dagster import ConfigurableResource

from tessera.config import TesseraConfig, load_config


class TesseraConfigResource(ConfigurableResource):  # type: ignore[type-arg]
    """Path to ``tessera.yaml``; defaults to ``$TESSERA_CONFIG`` or the bundled example."""

    config_path: str = os.environ.get("TESSERA_CONFIG", "examples/tessera.yaml")

    def load(self) -> TesseraConfig:
        return load_config(self.config_path)
