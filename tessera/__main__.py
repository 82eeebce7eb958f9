"""``python -m tessera`` and the ``tessera`` command: the CLI, imported only when it runs.

The worker processes of the ``process`` executor (a ``forkserver`` pool) each import the
main module of the process that started them before their first task. The ``tessera``
console script imports its entry point at its top, so when that entry point was
``tessera.cli:main`` every worker imported the whole CLI (about 2.4 s of imports, LanceDB's
client among them, that a worker never uses) on the parse step's critical path. The entry
point is this module instead; ``python -m tessera`` is not imported by workers at all.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from tessera.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
