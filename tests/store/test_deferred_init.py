"""A package's init deferred until an attribute it defines is asked for (tessera.store.deferred_init)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tessera.store.deferred_init import REST_CLIENT, defer_package_init

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``fakepkg``: an init that counts its runs and imports ``fakepkg.heavy``; ``fakepkg.light``
    imports nothing of the package."""
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent(
            """
            import builtins
            builtins.fakepkg_inits = getattr(builtins, "fakepkg_inits", 0) + 1
            if getattr(builtins, "fakepkg_fail", False):
                raise RuntimeError("init failed")
            from fakepkg.heavy import Heavy
            VERSION = "1.0"
            """
        )
    )
    (pkg / "heavy.py").write_text("class Heavy:\n    pass\n")
    (pkg / "light.py").write_text("from fakepkg.sub.leaf import LEAF\nLIGHT = 'light'\n")
    (pkg / "sub").mkdir()
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "leaf.py").write_text("LEAF = 'leaf'\n")
    (tmp_path / "fakemod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    monkeypatch.setattr(builtins, "fakepkg_inits", 0, raising=False)
    monkeypatch.setattr(builtins, "fakepkg_fail", False, raising=False)
    yield "fakepkg"
    for name in [m for m in sys.modules if m in ("fakepkg", "fakemod") or m.startswith("fakepkg.")]:
        del sys.modules[name]


def _inits() -> int:
    import builtins

    return int(builtins.fakepkg_inits)  # type: ignore[attr-defined]


def test_submodules_import_without_the_init_and_the_init_runs_once_on_demand(fake_package: str) -> None:
    assert defer_package_init(fake_package)
    from fakepkg.light import LIGHT  # a submodule (and a nested one) without the init

    assert LIGHT == "light" and _inits() == 0 and "fakepkg.heavy" not in sys.modules
    import fakepkg

    assert fakepkg.light.LIGHT == "light" and _inits() == 0  # a submodule is an attribute already
    assert fakepkg.VERSION == "1.0" and _inits() == 1  # a name the init defines: it runs
    from fakepkg import Heavy

    assert Heavy.__module__ == "fakepkg.heavy" and _inits() == 1
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        _ = fakepkg.missing
    assert _inits() == 1


def test_threads_asking_together_run_the_init_once(fake_package: str) -> None:
    assert defer_package_init(fake_package)
    import fakepkg

    start = threading.Barrier(8)
    seen: list[str] = []

    def ask() -> None:
        start.wait()
        seen.append(fakepkg.VERSION)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["1.0"] * 8 and _inits() == 1


def test_a_failing_init_fails_every_access_alike(fake_package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    monkeypatch.setattr(builtins, "fakepkg_fail", True, raising=False)
    assert defer_package_init(fake_package)
    import fakepkg

    for n in (1, 2):  # not a half-initialized module that answers AttributeError the second time
        with pytest.raises(RuntimeError, match="init failed"):
            _ = fakepkg.VERSION
        assert _inits() == n
    monkeypatch.setattr(builtins, "fakepkg_fail", False, raising=False)
    assert fakepkg.VERSION == "1.0"  # the cause gone, the package works


def test_nothing_is_done_for_an_imported_module_or_one_not_installed(fake_package: str) -> None:
    import fakepkg

    assert _inits() == 1
    assert not defer_package_init(fake_package)
    assert sys.modules[fake_package] is fakepkg and fakepkg.VERSION == "1.0"
    assert not defer_package_init("no_such_package_anywhere")
    assert "no_such_package_anywhere" not in sys.modules
    assert not defer_package_init("fakemod")  # a module, not a package: nothing to defer
    assert "fakemod" not in sys.modules


_PROBE = """
import json, sys, tempfile
import tessera.store.db
import lancedb, pyarrow as pa
out = {"api_after_import": "lance_namespace_urllib3_client.api" in sys.modules}
db = lancedb.connect(tempfile.mkdtemp())
t = db.create_table("t", pa.table({"id": [1, 2], "vector": [[0.0, 1.0], [1.0, 0.0]]}))
out["hit"] = t.search([0.0, 1.0]).limit(1).to_list()[0]["id"]
out["api_after_work"] = "lance_namespace_urllib3_client.api" in sys.modules
from lance_namespace_urllib3_client import TableApi, __version__
out["table_api"] = TableApi.__module__
out["version"] = __version__
print(json.dumps(out))
"""


def test_the_store_imports_lancedb_without_the_rest_client_and_it_still_works() -> None:
    """A fresh process: opening the store runs no REST API module; LanceDB works; code that
    does use the REST client gets it whole."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["api_after_import"] is False and out["api_after_work"] is False
    assert out["hit"] == 1
    assert out["table_api"] == f"{REST_CLIENT}.api.table_api" and out["version"]
