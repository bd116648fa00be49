"""The state folder as untrusted input: planted links, FIFOs and devices are refused, never followed or opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures_core.errors import StateError
from fixtures_core.records.planted import check_folder, is_real_folder, open_own


def test_a_real_folder_passes_and_a_missing_one_too(tmp_path: Path) -> None:
    check_folder(tmp_path)
    check_folder(tmp_path / "missing")
    assert is_real_folder(tmp_path) and not is_real_folder(tmp_path / "missing")


def test_a_symlink_to_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StateError, match=r"link: a symlink where assay keeps a folder"):
        check_folder(tmp_path / "link")
    assert not is_real_folder(tmp_path / "link")


def test_a_symlinked_file_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep")
    (tmp_path / "lock").symlink_to(target)
    with pytest.raises(StateError, match=r"lock: a symlink where assay keeps a file"):
        open_own(tmp_path / "lock", os.O_RDWR | os.O_CREAT)
    assert target.read_text() == "keep"


@pytest.mark.parametrize("flags", [os.O_RDONLY, os.O_RDWR | os.O_CREAT, os.O_WRONLY | os.O_APPEND])
def test_a_hard_linked_file_is_refused_and_its_other_name_untouched(tmp_path: Path, flags: int) -> None:
    outside = tmp_path / "precious"
    outside.write_text("keep")
    (tmp_path / "state").mkdir()
    os.link(outside, tmp_path / "state" / "lock")
    with pytest.raises(StateError, match=r"lock: a file with 2 hard links \(one may be outside the state folder\)"):
        open_own(tmp_path / "state" / "lock", flags)
    assert outside.read_text() == "keep"


@pytest.mark.parametrize("flags", [os.O_RDONLY, os.O_RDWR | os.O_CREAT, os.O_WRONLY])
def test_a_fifo_is_refused_at_once_for_reading_or_writing(tmp_path: Path, flags: int) -> None:
    os.mkfifo(tmp_path / "fifo")  # nobody at the other end: a blocking open would hang forever
    with pytest.raises(StateError, match=r"fifo: a FIFO where assay keeps a file"):
        open_own(tmp_path / "fifo", flags)


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"/dev/null: a character device where assay keeps a file"):
        open_own(Path("/dev/null"), os.O_RDONLY)


def test_a_regular_file_opens_blocking(tmp_path: Path) -> None:
    descriptor = open_own(tmp_path / "new", os.O_RDWR | os.O_CREAT)
    try:
        assert os.get_blocking(descriptor)
        os.write(descriptor, b"42")
    finally:
        os.close(descriptor)
    assert (tmp_path / "new").read_text() == "42"
