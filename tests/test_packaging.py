"""Library ranges and the application's lock agree: every dependency of the package (and of
the dev and adapter extras) is locked at a version its range admits; torch is pinned exactly
in pyproject.toml (the CPU wheel) and never in the lock; the package ships py.typed."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _lock() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = version
    return pins


def test_every_range_is_locked_at_a_version_it_admits() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    extras = project["optional-dependencies"]
    pins = _lock()
    for spec in [*project["dependencies"], *extras["dev"], *extras["langchain"], *extras["llama-index"]]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        if name == "torch":
            assert str(req.specifier) == "==2.13.0" and name not in pins
            continue
        assert name in pins, f"{req.name} is not in requirements.lock (make lock)"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{req.name} {pins[name]} not in {req.specifier}"
        )
    ranged = [Requirement(s) for s in project["dependencies"] if not s.startswith("torch")]
    assert all(not str(r.specifier).startswith("==") for r in ranged)  # ranges for a library install


def test_the_package_is_typed() -> None:
    assert (ROOT / "tessera" / "py.typed").exists()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["tessera"]
