"""Limits on what assay reads: each crossing is a LimitExceeded naming the limit, never Python's own error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures_core.limits import (
    MAX_INT_DIGITS,
    LimitExceeded,
    json_depth,
    loads_json,
    read_int,
    read_regular_file,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_within_the_depth_loads() -> None:
    assert loads_json(nested(3), max_depth=3) == [[[]]]


def test_json_one_level_too_deep_is_refused() -> None:
    with pytest.raises(LimitExceeded, match="nested deeper than 3 levels"):
        loads_json(nested(4), max_depth=3)


def test_json_ten_thousand_deep_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(LimitExceeded, match="nested deeper than 64 levels"):
        loads_json('{"a": ' + nested(10_000) + "}", max_depth=64)


def test_json_depth_counts_arrays_and_objects_without_recursion() -> None:
    assert json_depth(5) == 0
    assert json_depth({"a": [1, {"b": []}]}) == 4  # object, array, object, array
    deep: list[object] = []
    for _ in range(50_000):  # far past Python's recursion limit
        deep = [deep]
    assert json_depth(deep) == 50_001


def test_an_integer_of_too_many_digits_is_refused_by_name() -> None:
    assert read_int("-" + "9" * (MAX_INT_DIGITS - 1)) == -int("9" * (MAX_INT_DIGITS - 1))
    with pytest.raises(LimitExceeded, match=f"more than {MAX_INT_DIGITS} digits"):
        loads_json("9" * (MAX_INT_DIGITS + 1), max_depth=1)


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"hello")
    assert read_regular_file(path, 5, "thing") == b"hello"


def test_a_file_over_the_size_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with open(path, "wb") as handle:
        handle.truncate(10 * 1024**3)  # 10 GiB, sparse: reading it would take long and all memory
    with pytest.raises(LimitExceeded, match="is 10,737,418,240 bytes, more than the limit of 1,024"):
        read_regular_file(path, 1024, "thing")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(LimitExceeded, match="a FIFO"):
        read_regular_file(fifo, 1024, "thing")


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")])
def test_a_device_is_refused_without_reading(path: str, kind: str) -> None:
    with pytest.raises(LimitExceeded, match=f"{kind}, not a regular file"):
        read_regular_file(Path(path), 1024, "thing")


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LimitExceeded, match="a folder, not a regular file"):
        read_regular_file(tmp_path, 1024, "thing")


def test_a_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "missing", 1024, "thing")
