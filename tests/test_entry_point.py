"""The ``tessera`` command's entry point is a module that imports the CLI only when it runs.

Worker processes of the ``process`` executor (a ``forkserver`` pool) run the main module of
the process that started them (as ``__mp_main__``) before their first task; a console script
imports its entry point at its top. With ``tessera.cli:main`` as the entry point every worker
imported the whole CLI, LanceDB's client among it, which no worker uses."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# what pip writes for ``tessera = "tessera.__main__:main"`` (the body of every console script)
SCRIPT = """\
import re
import sys
from tessera.__main__ import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""

_AS_A_WORKER = """
import runpy, sys
runpy.run_path(sys.argv[1], run_name="__mp_main__")  # what multiprocessing.spawn does in a worker
heavy = [m for m in ("lancedb", "tessera.cli", "tessera.search", "tessera.store.db") if m in sys.modules]
print(",".join(heavy) or "-")
"""


def test_the_console_script_points_at_the_light_entry_point() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert scripts == {"tessera": "tessera.__main__:main"}


def test_a_worker_running_the_console_script_as_its_main_imports_no_cli(tmp_path: Path) -> None:
    assert _imported_as_a_worker(tmp_path / "tessera", SCRIPT) == "-"
    # the old entry point, run the same way, imports all of it: the check can fail
    old = SCRIPT.replace("from tessera.__main__ import main", "from tessera.cli import main")
    everything = "lancedb,tessera.cli,tessera.search,tessera.store.db"
    assert _imported_as_a_worker(tmp_path / "tessera-old", old) == everything


def _imported_as_a_worker(script: Path, text: str) -> str:
    script.write_text(text, encoding="utf-8")
    cmd = [sys.executable, "-c", _AS_A_WORKER, str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def test_the_command_runs_the_cli(tmp_path: Path) -> None:
    """Both ways in reach the CLI: its arguments, its typed errors and exit codes."""
    script = tmp_path / "tessera"
    script.write_text(SCRIPT, encoding="utf-8")
    missing = str(tmp_path / "absent.yaml")
    for cmd in ([sys.executable, str(script)], [sys.executable, "-m", "tessera"]):
        shown = subprocess.run([*cmd, "--help"], capture_output=True, text=True, cwd=tmp_path)
        assert shown.returncode == 0 and "usage:" in shown.stdout and " run" in shown.stdout
        failed = subprocess.run([*cmd, "--config", missing, "status"], capture_output=True, text=True)
        assert failed.returncode != 0 and "absent.yaml" in failed.stderr and "Traceback" not in failed.stderr


_POOL_MAIN = """
if __name__ == "__main__":
    import sys
    from functools import partial
    from tessera.pipeline.executors import ProcessExecutor
    probe = partial(eval, "[m for m in ('lancedb', 'tessera.cli') if m in __import__('sys').modules]")
    seen = list(ProcessExecutor(2).map(probe, [None, None]))
    print(sorted({m for found in seen for m in found}) or "-")
"""


def test_the_process_executors_workers_under_the_command_import_no_cli(tmp_path: Path) -> None:
    """The real pool: a main module with the console script's top lines starts the process
    executor, and its workers report what they imported. With the old top line they hold the
    CLI and LanceDB; with the new one neither."""
    for top, expected in (
        ("from tessera.__main__ import main", "-"),
        ("from tessera.cli import main", "['lancedb', 'tessera.cli']"),
    ):
        script = tmp_path / f"main-{len(top)}.py"
        script.write_text(f"import re\nimport sys\n{top}\n{_POOL_MAIN}", encoding="utf-8")
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected, out.stderr
