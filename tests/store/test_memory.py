"""``release_memory`` hands freed heap back to the operating system (issue 17: a run's steps
each started from the previous step's high-water mark)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tessera.store.memory import release_memory

PROGRAM = textwrap.dedent(
    """
    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon"):
                return int(line.split()[1]) // 1024
    from tessera.store.memory import release_memory
    base = rss()
    blocks = [bytearray(60_000) for _ in range(4000)]  # C heap, below glibc's mmap threshold
    for b in blocks:
        b[::4096] = b"x" * len(b[::4096])  # touch every page
    keep = blocks[::50]  # live blocks between the freed ones: the heap cannot shrink by itself
    del blocks
    freed = rss()
    release_memory()
    print(base, freed, rss(), len(keep))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RssAnon and malloc_trim are Linux's")
def test_freed_heap_between_live_blocks_goes_back_to_the_system() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True)
    base, freed, released, kept = (int(x) for x in out.stdout.split())
    assert kept == 80
    assert freed >= base + 150, "the freed blocks were already returned: nothing to measure"
    assert released <= freed - 150, (base, freed, released)


def test_release_is_safe_to_call_any_time() -> None:
    live = [bytearray(1000) for _ in range(100)]
    release_memory()
    release_memory()
    assert all(len(b) == 1000 for b in live)  # live memory is untouched
