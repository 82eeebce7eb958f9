"""``release_memory`` hands freed heap back to the operating system (issue 17: a run's steps
each started from the previous step's high-water mark)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap

import pytest

from tessera.errors import ConfigError
from tessera.store.memory import release_memory
from tests.conftest import Workspace

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


ARENAS = textwrap.dedent(
    """
    import ctypes, os, sys, tempfile, threading
    from tessera.store.memory import limit_malloc_arenas

    limited = limit_malloc_arenas(int(sys.argv[1]))
    threads = 8
    gate = threading.Barrier(threads + 1)
    held = []

    def work():
        held.append(bytearray(100_000))  # C heap (under glibc's mmap threshold), in this thread
        gate.wait()  # every thread alive, so no arena is handed on by one that exited
        gate.wait()

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    gate.wait()
    libc = ctypes.CDLL("libc.so.6")
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    path = os.path.join(tempfile.mkdtemp(), "heaps.xml")
    fp = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    gate.wait()
    for t in pool:
        t.join()
    print(limited, open(path).read().count("<heap nr="), len(held))
    """
)


def _arenas(limit: int, env: dict[str, str] | None = None) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", ARENAS, str(limit)],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | (env or {}),
    )
    limited, heaps, held = out.stdout.split()
    assert held == "8"
    return limited == "True", int(heaps)


GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="glibc's arenas")
def test_threads_share_at_most_the_configured_arenas() -> None:
    # unlimited, 8 threads allocating at once get heaps of their own (glibc allows 8 per core)
    limited, heaps = _arenas(0)
    assert not limited and heaps >= 8
    assert _arenas(2) == (True, 2)
    assert _arenas(1) == (True, 1)
    # the operator's MALLOC_ARENA_MAX wins: glibc applied it, the call leaves it alone
    assert _arenas(2, {"MALLOC_ARENA_MAX": "3"}) == (False, 3)


def test_a_run_caps_arenas_from_its_configuration(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    import tessera.pipeline.context as context

    calls: list[object] = []
    monkeypatch.setattr(context, "limit_malloc_arenas", calls.append)
    monkeypatch.setattr(context, "use_arrow_pool", calls.append)
    ws.tenant("acme", {"a.md": "# A\n\ntext\n"})
    ws.context("acme")
    ws.execution = {"executor": "inline", "malloc_arenas": 0, "arrow_pool": "default"}
    ws.context("acme")
    assert calls == [2, "system", 0, "default"]


@pytest.mark.parametrize("bad", [-1, 1025, "2", True, 1.5])
def test_a_bad_arena_count_names_its_key(ws: Workspace, bad: object) -> None:
    ws.tenant("acme", {"a.md": "# A\n\ntext\n"})
    ws.execution = {"executor": "inline", "malloc_arenas": bad}
    with pytest.raises(ConfigError, match=r"execution\.malloc_arenas"):
        ws.config()


POOL = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    from tessera.store.memory import use_arrow_pool

    first = use_arrow_pool(sys.argv[1])
    again = use_arrow_pool(sys.argv[1])
    before = pa.array(range(1000))  # allocated from the pool now in use
    print(first, again, pa.default_memory_pool().backend_name, sum(before.to_pylist()))
    """
)


def _pool(name: str, env: dict[str, str] | None = None) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    command = [sys.executable, "-c", POOL, name]
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=clean | (env or {}))
    return out.stdout.split()


def test_a_run_allocates_arrow_memory_from_the_c_heap() -> None:
    assert _pool("system") == ["True", "False", "system", "499500"]
    default = _pool("default")
    assert default[:2] == ["False", "False"] and default[2] != "system"  # pyarrow's own choice
    # the operator's ARROW_DEFAULT_MEMORY_POOL wins over the configuration
    assert _pool("system", {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"})[:3] == ["False", "False", "jemalloc"]


def test_an_unknown_pool_is_refused(ws: Workspace) -> None:
    from tessera.store.memory import use_arrow_pool

    with pytest.raises(ValueError, match="unknown Arrow memory pool"):
        use_arrow_pool("mimalloc-ish")
    ws.tenant("acme", {"a.md": "# A\n\ntext\n"})
    ws.execution = {"executor": "inline", "arrow_pool": "tcmalloc"}
    with pytest.raises(ConfigError, match=r"execution\.arrow_pool"):
        ws.config()


THRESHOLD = textwrap.dedent(
    """
    import ctypes, sys
    from tessera.store.memory import fix_mmap_threshold

    class Info(ctypes.Structure):
        _fields_ = [
            (n, ctypes.c_size_t)
            for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                      "uordblks", "fordblks", "keepcost")
        ]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Info
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    fixed = fix_mmap_threshold(int(sys.argv[1]))
    mapped = []
    for size in (int(s) for s in sys.argv[2:]):  # each block allocated, then freed
        before = libc.mallinfo2().hblkhd
        block = libc.malloc(size)
        mapped.append(libc.mallinfo2().hblkhd - before >= size)
        libc.free(block)
    print(fixed, *mapped)
    """
)
MIB = 1 << 20


def _mapped(threshold: int, sizes: list[int], env: dict[str, str] | None = None) -> list[str]:
    """Whether the threshold was set, then for each block whether glibc mapped it on its own."""
    clean = {k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")}
    command = [sys.executable, "-c", THRESHOLD, str(threshold), *(str(s) for s in sizes)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=clean | (env or {}))
    return out.stdout.split()


@pytest.mark.skipif(not GLIBC, reason="glibc's mmap threshold")
def test_large_blocks_stay_mapped_on_their_own_after_one_is_freed() -> None:
    # glibc's sliding threshold: the first 6 MiB block is mapped, and freeing it raises the
    # threshold past 6 MiB, so the next one comes from the heap (where it can pin pages)
    assert _mapped(0, [6 * MIB, 6 * MIB, 6 * MIB]) == ["False", "True", "False", "False"]
    # a fixed threshold maps every block from it on, and only those: smaller ones stay on the heap
    fixed = _mapped(4 * MIB, [6 * MIB, 6 * MIB, 4 * MIB + 1, 1 * MIB])
    assert fixed == ["True", "True", "True", "True", "False"]
    assert _mapped(32 * MIB, [6 * MIB, 40 * MIB]) == ["True", "False", "True"]  # glibc's largest


@pytest.mark.skipif(not GLIBC, reason="glibc's mmap threshold")
@pytest.mark.parametrize(
    "env",
    [
        {"MALLOC_MMAP_THRESHOLD_": str(64 << 10)},
        {"GLIBC_TUNABLES": f"glibc.malloc.mmap_threshold={64 << 10}"},
    ],
)
def test_the_operators_threshold_wins(env: dict[str, str]) -> None:
    # glibc applied the environment's 64 KiB (fixed too: a freed block does not raise it)
    assert _mapped(4 * MIB, [1 * MIB, 1 * MIB, 128 << 10], env) == ["False", "True", "True", "True"]


def test_a_threshold_above_glibcs_limit_is_refused() -> None:
    from tessera.store.memory import fix_mmap_threshold

    for bad in (32 * MIB + 1, -1):  # refused before anything else, glibc or not
        with pytest.raises(ValueError, match="outside 0 to glibc's limit"):
            fix_mmap_threshold(bad)
    assert fix_mmap_threshold(0) is False  # glibc's own sliding threshold: nothing to set


def test_a_run_fixes_the_threshold_from_its_configuration(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tessera.pipeline.context as context

    calls: list[int] = []
    monkeypatch.setattr(context, "fix_mmap_threshold", calls.append)
    ws.tenant("acme", {"a.md": "# A\n\ntext\n"})
    ws.context("acme")
    ws.execution = {"executor": "inline", "mmap_threshold": 0}
    ws.context("acme")
    ws.execution = {"executor": "inline", "mmap_threshold": 32 * MIB}
    ws.context("acme")
    assert calls == [4 * MIB, 0, 32 * MIB]


@pytest.mark.parametrize("bad", [-1, 32 * MIB + 1, "4194304", True, 1.5])
def test_a_bad_threshold_names_its_key(ws: Workspace, bad: object) -> None:
    ws.tenant("acme", {"a.md": "# A\n\ntext\n"})
    ws.execution = {"executor": "inline", "mmap_threshold": bad}
    with pytest.raises(ConfigError, match=r"execution\.mmap_threshold"):
        ws.config()
