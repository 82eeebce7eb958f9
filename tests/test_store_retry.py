"""Commit retries on a throttled store: transient errors retried a bounded number of times,
everything else raised at once."""

from __future__ import annotations

import pytest

from tessera.store.db import is_transient_store_error
from tessera.store.retry import COMMIT_ATTEMPTS, retrying


class Flaky:
    def __init__(self, errors: list[BaseException]) -> None:
        self.errors, self.calls = errors, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "committed"


SLOW = RuntimeError(
    "lance error: Generic S3 error: response error 503 Service Unavailable <Code>SlowDown</Code>"
)


def test_a_throttled_commit_is_retried_until_it_goes_through() -> None:
    waits: list[float] = []
    fn = Flaky([SLOW, OSError("operation timed out")])
    assert retrying(fn, sleep=waits.append) == "committed"
    assert fn.calls == 3 and len(waits) == 2 and all(0 < w <= 4.5 for w in waits)


def test_a_store_that_keeps_throttling_fails_after_the_bound() -> None:
    waits: list[float] = []
    fn = Flaky([SLOW] * 10)
    with pytest.raises(RuntimeError, match="SlowDown"):
        retrying(fn, sleep=waits.append)
    assert fn.calls == COMMIT_ATTEMPTS and len(waits) == COMMIT_ATTEMPTS - 1


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("Commit conflict for version 7"),  # a conflict is the caller's to resolve
        ValueError("Schema error: field not found"),
        KeyError("503"),  # not a store error type, whatever its text
    ],
)
def test_other_errors_are_not_retried(error: BaseException) -> None:
    fn = Flaky([error])
    with pytest.raises(type(error)):
        retrying(fn, sleep=lambda _s: None)
    assert fn.calls == 1 and not is_transient_store_error(error)


@pytest.mark.parametrize(
    "text",
    [
        "lance error: LanceError(IO): Not found: /x/_indices/6b72ba29-84bd-4789-a72e-167050349b0f/p.lance",
        "lance error: LanceError(IO): Not found: /tmp/test_ocr_timeout0/index/t.lance/data/a.lance",
        "lance error: LanceError(IO): Not found: /srv/reconnected/index/t.lance/_versions/3.manifest",
        "External error: Not found: /tmp/test_timeouts0/t.lance/_indices/e1091524-5030/tokens.lance, "
        "/home/runner/work/lance/lance/rust/lance-io/src/object_store.rs:1721:12",
    ],
)
def test_a_missing_file_is_damage_even_when_its_path_holds_a_throttle_word(text: str) -> None:
    """Found by a flaky run: a uuid with 503 in it made a missing index file look like a
    throttled store, so the doctor re-raised it instead of reporting the index unusable."""
    from tessera.store.db import is_storage_error

    error = RuntimeError(text)
    assert is_storage_error(error) and not is_transient_store_error(error)


@pytest.mark.parametrize(
    "text",
    [
        "response error 503 Service Unavailable",
        "error sending request: connection reset by peer",
        "operation timed out",
        "request timeout after 30s",
        "dns error: failed to lookup address",
        "<Code>SlowDown</Code> please reduce your request rate",
    ],
)
def test_throttle_words_are_still_transient(text: str) -> None:
    assert is_transient_store_error(OSError(text))
