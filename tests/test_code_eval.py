"""``tessera eval code``: the manifest must describe the package (issue 15).

Before, ``--data PKG`` silently used the bundled manifest of another package and crashed on
the first file it listed. Now a mismatch is a typed ``InvalidArgument`` naming ``--manifest``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tessera.cli import main
from tessera.errors import InvalidArgument
from tessera.evaluation.code_eval import check_manifest, default_manifest


def _package(root: Path, name: str, files: dict[str, str]) -> Path:
    pkg = root / name
    pkg.mkdir()
    for rel, text in files.items():
        (pkg / rel).write_text(text, encoding="utf-8")
    manifest = {rel: {"sha256": "", "defs": []} for rel in files}
    (root / f"{name}.ast_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return pkg


def test_matching_manifest_is_found_beside_the_package(tmp_path: Path) -> None:
    pkg = _package(tmp_path, "shop", {"shop.py": "def f():\n    return 1\n"})
    assert default_manifest(pkg) == tmp_path / "shop.ast_manifest.json"
    assert set(check_manifest(pkg, default_manifest(pkg))) == {"shop.py"}


def test_another_packages_manifest_is_a_typed_error(tmp_path: Path) -> None:
    shop = _package(tmp_path, "shop", {"shop.py": "x = 1\n"})
    _package(tmp_path, "bank", {"bank.py": "y = 2\n", "ledger.py": "z = 3\n"})
    with pytest.raises(InvalidArgument) as err:
        check_manifest(shop, tmp_path / "bank.ast_manifest.json")
    assert err.value.key == "--manifest"
    assert "does not match package" in str(err.value) and "bank.py" in str(err.value)


@pytest.mark.parametrize(
    "content",
    ["not json", json.dumps(["a.py"]), json.dumps({"shop.py": {"no_defs": 1}})],
)
def test_unreadable_or_malformed_manifest_is_a_typed_error(tmp_path: Path, content: str) -> None:
    shop = _package(tmp_path, "shop", {"shop.py": "x = 1\n"})
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidArgument) as err:
        check_manifest(shop, bad)
    assert err.value.key == "--manifest"


def test_missing_manifest_names_the_option(tmp_path: Path) -> None:
    pkg = tmp_path / "lonely"
    pkg.mkdir()
    with pytest.raises(InvalidArgument, match="pass --manifest"):
        check_manifest(pkg, default_manifest(pkg))


def test_cli_refuses_a_mismatched_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shop = _package(tmp_path, "shop", {"shop.py": "x = 1\n"})
    _package(tmp_path, "bank", {"bank.py": "y = 2\n"})
    code = main(["eval", "code", "--data", str(shop), "--manifest", str(tmp_path / "bank.ast_manifest.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--manifest" in err and "Traceback" not in err
    # a package with no manifest beside it: the same typed refusal, not another package's manifest
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "a.py").write_text("a = 1\n", encoding="utf-8")
    assert main(["eval", "code", "--data", str(lonely)]) == 2
    assert "--manifest" in capsys.readouterr().err
