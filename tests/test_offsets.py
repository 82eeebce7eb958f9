"""normalize_text_bytes and OffsetMap: exact round trips from normalized text to source bytes."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessera.offsets import CHECKPOINT, OffsetMap, normalize_text_bytes

BOM = b"\xef\xbb\xbf"


def reference_decode(raw: bytes) -> str:
    """What normalization must produce: BOM dropped, U+FFFD for bad bytes, CRLF/CR -> LF."""
    body = raw[3:] if raw.startswith(BOM) else raw
    return body.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def replaced_invalid_bytes(text: str, omap: OffsetMap) -> int:
    return sum(w for i, _b, w in omap.anchors if w >= 0 and text[i] == "\ufffd")


def check_all_ranges(raw: bytes, ranges: list[tuple[int, int]] | None = None) -> None:
    """``normalize(raw[span(s, e)]) == text[s:e]`` for the given (default: all) ranges.

    Every normalized char is a whole unit (a replaced CRLF, a replaced invalid sequence, a
    verbatim code point), so this holds for any range of chars, with one exception: a slice
    that *starts* with U+FEFF re-reads it as a BOM and drops it. Such ranges are checked
    against the slice with the BOM restored.
    """
    text, omap, _ = normalize_text_bytes(raw)
    if ranges is None:
        ranges = [(s, e) for s in range(len(text)) for e in range(s + 1, len(text) + 1)]
    for s, e in ranges:
        b0, b1 = omap.span(text, s, e)
        assert 0 <= b0 < b1 <= len(raw)
        assert (b0, b1) == (omap.byte_start(text, s), omap.byte_start(text, e))
        got = normalize_text_bytes(raw[b0:b1])[0]
        if text[s] == "\ufeff":
            assert raw[b0:b1].startswith(BOM)
            got = "\ufeff" + got
        assert got == text[s:e], (s, e, b0, b1)


def check_tiling(raw: bytes) -> None:
    """Char byte ranges are contiguous and cover the source after the BOM exactly."""
    text, omap, _ = normalize_text_bytes(raw)
    pos = 3 if raw.startswith(BOM) else 0
    for i in range(len(text)):
        assert omap.byte_start(text, i) == pos, i
        pos += omap.char_width(text, i)
    assert pos == len(raw)
    assert omap.byte_start(text, len(text)) == len(raw)  # also for an empty text after a BOM


# --- normalization ---------------------------------------------------------------------------


def test_plain_ascii_is_verbatim_with_one_anchor() -> None:
    text, omap, invalid = normalize_text_bytes(b"hello\nworld")
    assert (text, invalid) == ("hello\nworld", 0)
    assert omap.anchors == ((0, 0, -1),)
    assert omap.text_len == 11


def test_empty_input() -> None:
    text, omap, invalid = normalize_text_bytes(b"")
    assert (text, invalid, omap.text_len) == ("", 0, 0)
    assert omap.byte_start(text, 0) == 0


def test_bom_is_dropped_and_offsets_start_after_it() -> None:
    raw = BOM + b"abc"
    text, omap, invalid = normalize_text_bytes(raw)
    assert (text, invalid) == ("abc", 0)
    assert omap.span(text, 0, 3) == (3, 6)
    assert omap.span(text, 1, 2) == (4, 5)
    check_all_ranges(raw)


def test_bom_in_the_middle_is_a_kept_character() -> None:
    raw = b"a" + BOM + b"b"
    text, omap, _ = normalize_text_bytes(raw)
    assert text == "a\ufeffb"
    assert omap.span(text, 1, 2) == (1, 4)
    check_all_ranges(raw)


def test_crlf_becomes_lf_with_width_two() -> None:
    raw = b"a\r\nb\r\n"
    text, omap, invalid = normalize_text_bytes(raw)
    assert (text, invalid) == ("a\nb\n", 0)
    assert omap.span(text, 1, 2) == (1, 3)
    assert omap.span(text, 2, 3) == (3, 4)
    assert omap.span(text, 0, 4) == (0, 6)
    assert omap.char_width(text, 1) == 2
    check_all_ranges(raw)
    check_tiling(raw)


def test_lone_cr_becomes_lf_with_width_one() -> None:
    raw = b"a\rb\r\r\nc\r"
    text, omap, _ = normalize_text_bytes(raw)
    assert text == "a\nb\n\nc\n"
    assert [omap.char_width(text, i) for i in range(len(text))] == [1, 1, 1, 1, 2, 1, 1]
    assert omap.span(text, 4, 5) == (4, 6)
    check_all_ranges(raw)
    check_tiling(raw)


def test_multibyte_utf8_widths() -> None:
    raw = "aé€😀b".encode()
    text, omap, invalid = normalize_text_bytes(raw)
    assert (text, invalid) == ("aé€😀b", 0)
    assert [omap.char_width(text, i) for i in range(len(text))] == [1, 2, 3, 4, 1]
    assert omap.span(text, 1, 2) == (1, 3)
    assert omap.span(text, 2, 3) == (3, 6)
    assert omap.span(text, 3, 4) == (6, 10)
    assert omap.span(text, 3, 5) == (6, 11)
    assert omap.anchors == ((0, 0, -1),)  # multi-byte chars are still verbatim
    check_all_ranges(raw)
    check_tiling(raw)


@pytest.mark.parametrize(
    ("raw", "text", "invalid"),
    [
        (b"\xff", "\ufffd", 1),
        (b"a\xff\xfeb", "a\ufffd\ufffdb", 2),
        (b"a\xe2\x82", "a\ufffd", 2),  # truncated 3-byte sequence at the end: one char
        (b"\xe2\x82x", "\ufffdx", 2),  # truncated sequence before ascii
        (b"\xe2\x82\xe2\x82\xac", "\ufffd€", 2),
        (b"\xf0\x9f\x98", "\ufffd", 3),
        (b"\xed\xa0\x80x", "\ufffd\ufffd\ufffdx", 3),  # an encoded surrogate is invalid
        (b"\x80\x80", "\ufffd\ufffd", 2),  # stray continuation bytes
        (b"\xc3\r\n", "\ufffd\n", 1),
        (b"\r\xff\n", "\n\ufffd\n", 1),
        (BOM + b"\xff", "\ufffd", 1),
        ("\ufffd".encode(), "\ufffd", 0),  # a real U+FFFD is not an invalid byte
    ],
)
def test_invalid_bytes_are_replaced_and_counted(raw: bytes, text: str, invalid: int) -> None:
    got_text, omap, got_invalid = normalize_text_bytes(raw)
    assert (got_text, got_invalid) == (text, invalid)
    assert got_text == reference_decode(raw)
    assert replaced_invalid_bytes(got_text, omap) == invalid
    check_all_ranges(raw)
    check_tiling(raw)


SMALL_INPUTS = [
    BOM + b"a\r\nb\rc" + "é€😀".encode() + b"\xff\xfe\r\n",
    b"\r\r\n\n\r",
    b"\xe2\x82\r\n\xe2\x82\xac\r",
    "x\ufeffy\r\n\ufeff".encode(),
    b"\xf0\x9f\x98\xf0\x9f\x98\x80\xed\xa0\x80",
    b"line one\r\nline two\rline three\n" + "naïve café – 😀".encode() + b"\xc3(\r\n",
]


@pytest.mark.parametrize("raw", SMALL_INPUTS)
def test_every_range_of_small_inputs_round_trips(raw: bytes) -> None:
    text, omap, invalid = normalize_text_bytes(raw)
    assert text == reference_decode(raw)
    assert replaced_invalid_bytes(text, omap) == invalid
    check_all_ranges(raw)
    check_tiling(raw)


PIECES = [
    b"a",
    b"b",
    b" ",
    b"xyz",
    b"\n",
    b"\r\n",
    b"\r",
    "é".encode(),
    "€".encode(),
    "😀".encode(),
    "\ufeff".encode(),
    "\ufffd".encode(),
    b"\xff",
    b"\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xed\xa0\x80",
]
raw_strategy = st.one_of(
    st.tuples(st.booleans(), st.lists(st.sampled_from(PIECES), max_size=40)).map(
        lambda t: (BOM if t[0] else b"") + b"".join(t[1])
    ),
    st.binary(max_size=60),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=raw_strategy)
def test_random_bytes_every_range_round_trips(raw: bytes) -> None:
    text, omap, invalid = normalize_text_bytes(raw)
    assert text == reference_decode(raw)
    assert "\r" not in text
    assert replaced_invalid_bytes(text, omap) == invalid
    assert omap.text_len == len(text)
    check_all_ranges(raw)
    check_tiling(raw)


@settings(max_examples=200, deadline=None)
@given(raw=raw_strategy)
def test_map_survives_json_round_trip(raw: bytes) -> None:
    text, omap, _ = normalize_text_bytes(raw)
    data = json.loads(json.dumps(omap.to_json()))
    back = OffsetMap.from_json(data)
    assert back == omap
    for s in range(len(text)):
        assert back.span(text, s, len(text)) == omap.span(text, s, len(text))


def test_to_json_shape() -> None:
    text, omap, _ = normalize_text_bytes(b"a\r\nb")
    assert omap.to_json() == {"text_len": 3, "anchors": [[0, 0, -1], [1, 1, 2]]}
    assert OffsetMap.from_json(omap.to_json()) == omap
    assert text == "a\nb"


def test_byte_start_at_end_of_bom_only_source() -> None:
    text, omap, _ = normalize_text_bytes(BOM)
    assert text == ""
    assert omap.byte_start(text, 0) == 3


# --- checkpoints on long texts ----------------------------------------------------------------


def _max_lookup_distance(text: str, omap: OffsetMap) -> int:
    """Largest number of chars byte_start() has to re-encode after its anchor."""
    worst = 0
    for i in range(len(text) + 1):
        idx, _b, w = omap._anchor(i)
        worst = max(worst, i - idx - (1 if w >= 0 and i > idx else 0))
    return worst


def test_checkpoints_on_long_ascii_text() -> None:
    raw = b"abcdefghij" * 1300  # 13000 chars, one verbatim run
    text, omap, _ = normalize_text_bytes(raw)
    assert len(text) > 3 * CHECKPOINT
    assert [a[0] for a in omap.anchors] == [0, CHECKPOINT, 2 * CHECKPOINT, 3 * CHECKPOINT]
    assert all(w == -1 and b == i for i, b, w in omap.anchors)
    assert _max_lookup_distance(text, omap) <= CHECKPOINT
    for s, e in [(0, len(text)), (4095, 4097), (CHECKPOINT, CHECKPOINT + 1), (12000, 12999)]:
        assert omap.span(text, s, e) == (s, e)


def test_checkpoints_on_long_mixed_text() -> None:
    rng = random.Random(7)
    parts = []
    for _ in range(3000):
        parts.append(
            rng.choice([b"word ", "café ".encode(), "😀".encode(), b"\r\n", b"\r", b"\xff", b"x" * 50])
        )
    raw = BOM + b"".join(parts) + b"y" * 9000
    text, omap, _ = normalize_text_bytes(raw)
    assert len(text) > 2 * CHECKPOINT
    assert _max_lookup_distance(text, omap) <= CHECKPOINT
    check_tiling(raw)
    ranges = [(0, len(text))] + [tuple(sorted(rng.sample(range(len(text) + 1), 2))) for _ in range(300)]
    check_all_ranges(raw, [r for r in ranges if r[0] < r[1]])


def test_checkpoints_keep_the_map_small() -> None:
    raw = ("é" * 20000).encode()
    text, omap, _ = normalize_text_bytes(raw)
    assert len(omap.anchors) == -(-len(text) // CHECKPOINT)
    assert omap.span(text, 19999, 20000) == (39998, 40000)
    assert omap.byte_start(text, 20000) == 40000


# --- invalid ranges ---------------------------------------------------------------------------


@pytest.mark.parametrize(("s", "e"), [(0, 0), (2, 2), (3, 2), (-1, 2), (0, 6), (5, 6), (-2, -1)])
def test_span_rejects_invalid_ranges(s: int, e: int) -> None:
    text, omap, _ = normalize_text_bytes(b"ab\r\ncd")
    assert len(text) == 5
    with pytest.raises(ValueError):
        omap.span(text, s, e)


@pytest.mark.parametrize("i", [-1, 6, 100])
def test_byte_start_rejects_out_of_range(i: int) -> None:
    text, omap, _ = normalize_text_bytes(b"ab\r\ncd")
    with pytest.raises(ValueError):
        omap.byte_start(text, i)


def test_span_on_empty_text_is_invalid() -> None:
    text, omap, _ = normalize_text_bytes(b"")
    with pytest.raises(ValueError):
        omap.span(text, 0, 0)
    with pytest.raises(ValueError):
        omap.span(text, 0, 1)
