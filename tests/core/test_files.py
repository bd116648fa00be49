"""Safe file names and writes a crash never leaves half done (``fixtures_core.files``)."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fixtures_core.errors import StateError
from fixtures_core.files import (
    MAX_SLUG,
    append_json_line,
    repair_torn_tail,
    slug,
    write_atomic,
    write_json_atomic,
    write_text_atomic,
)


def test_a_safe_short_name_is_its_own_slug() -> None:
    assert slug("CLI-high_2.v1") == "CLI-high_2.v1"


def test_names_that_differ_never_share_a_slug() -> None:
    names = ["a/b", "a_b", "a b", "a:b", "a\\b", "..", ".", "", "ä", "a/b/", "_a_b_", "-"]
    slugs = [slug(name) for name in names]
    assert len(set(slugs)) == len(names), slugs


def test_a_long_name_is_cut_and_keeps_a_digest() -> None:
    long = "n" * 300
    assert len(slug(long)) <= MAX_SLUG + 13
    assert slug(long) != slug(long + "x") != slug("n" * 299)


def test_slugs_never_leave_the_folder_or_hide() -> None:
    for name in ["..", "../x", ".hidden", "/etc/passwd", "a\0b"]:
        made = slug(name)
        assert "/" not in made and not made.startswith(".") and "\0" not in made


def test_an_atomic_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "new" / "run.json"
    write_json_atomic(target, {"b": 1, "a": [1, 2]})
    write_text_atomic(tmp_path / "report.md", "# report\n")

    assert json.loads(target.read_text()) == {"b": 1, "a": [1, 2]}
    assert target.read_text().endswith("\n")
    assert (tmp_path / "report.md").read_text() == "# report\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["new", "report.md", "run.json"]


def test_a_write_that_fails_keeps_the_old_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    write_json_atomic(target, {"old": True})

    def half_then_crash(tmp: Path) -> None:
        tmp.write_text('{"new": tr')
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        write_atomic(target, half_then_crash)

    assert json.loads(target.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_write_to_a_fifo_or_device_goes_through_it_and_never_replaces_it(tmp_path: Path) -> None:
    # ``--json /dev/stdout`` or ``--json /dev/full`` as root: moving a file over them would replace the device.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    write_json_atomic(fifo, {"a": 1})
    reader.join(timeout=30)
    assert received == ['{\n "a": 1\n}\n']
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_json_lines_are_appended_whole_and_compact(tmp_path: Path) -> None:
    path = tmp_path / "row.jsonl"
    append_json_line(path, {"sample": {"index": 0, "stdout": "a\nb"}})
    append_json_line(path, {"raw_row": {"path": tmp_path}})

    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"sample": {"index": 0, "stdout": "a\nb"}},
        {"raw_row": {"path": str(tmp_path)}},
    ]
    assert " " not in lines[0]


def test_a_short_write_of_a_json_line_is_an_error(tmp_path: Path) -> None:
    # A file-size limit makes the kernel write only the bytes below it (as a full disk would).
    code = f"""
import resource, signal, sys
import os
from pathlib import Path
from fixtures_core.files import append_json_line
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (10, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    append_json_line(Path({str(tmp_path / "row.jsonl")!r}), {{"sample": "x" * 40}})
except OSError as exc:
    sys.exit(str(exc))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert done.returncode == 1  # {"sample":"x...x"}\n: 1 + 8 + 1 + 42 + 1 + 1 = 54 bytes
    assert "wrote 10 of 54 bytes of an evidence line (is the disk full?)" in done.stderr


def test_a_failed_write_names_the_file_it_could_not_write(tmp_path: Path) -> None:
    # The kernel's errors of a write (a full disk's ENOSPC; here a file-size limit's EFBIG) name no file.
    target = tmp_path / "row.jsonl"
    code = f"""
import resource, signal, sys
from pathlib import Path
from fixtures_core.files import append_json_line
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    append_json_line(Path({str(target)!r}), {{"sample": 1}})
except OSError as exc:
    sys.exit(f"{{exc.errno}} {{exc.filename}}")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == f"{errno.EFBIG} {target}\n"


def test_evidence_is_never_appended_to_a_device(tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"^/dev/full: a character device where assay keeps a file"):
        append_json_line(Path("/dev/full"), {"sample": 1})


@pytest.mark.parametrize("write", ["append", "repair"])
def test_a_file_with_a_second_hard_link_is_never_written_into(tmp_path: Path, write: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep, no newline")  # a repair would cut all of it
    evidence = tmp_path / "state" / "row.jsonl"
    evidence.parent.mkdir()
    os.link(outside, evidence)
    with pytest.raises(StateError, match=r"row.jsonl: a file with 2 hard links \(one may be outside the state"):
        if write == "append":
            append_json_line(evidence, {"sample": 1})
        else:
            repair_torn_tail(evidence)
    assert outside.read_bytes() == b"keep, no newline"


def test_a_symlinked_evidence_file_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    (tmp_path / "row.jsonl").symlink_to(outside)
    for write in (lambda p: append_json_line(p, {"sample": 1}), repair_torn_tail):
        with pytest.raises(StateError, match=r"row.jsonl: a symlink where assay keeps a file"):
            write(tmp_path / "row.jsonl")
    assert outside.read_bytes() == b"keep"


@pytest.mark.parametrize(
    ("content", "kept"),
    [(b'{"a":1}\n{"b":', b'{"a":1}\n'), (b'{"a":1}\n', b'{"a":1}\n'), (b'{"torn', b""), (b"", b"")],
    ids=["torn-last-line", "whole", "only-a-torn-line", "empty"],
)
def test_a_torn_last_line_is_cut_before_anything_is_appended(tmp_path: Path, content: bytes, kept: bytes) -> None:
    path = tmp_path / "evidence.jsonl"
    path.write_bytes(content)
    assert repair_torn_tail(path) is (content != kept)
    append_json_line(path, {"c": 3})
    assert path.read_bytes() == kept + b'{"c":3}\n'
