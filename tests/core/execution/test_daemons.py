"""Daemons: a file's service started on a free port before its rows, its port in their templates,
stopped (and reaped) afterwards; a daemon that cannot serve makes only its own file's rows ERR."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.daemons import running_daemons
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.parsing.parser import parse_file
from fixtures_core.spec import RowSpec
from tests.processes import gone_soon

SERVE = f"echo $$ > daemon.pid; exec {sys.executable} -m http.server {{{{.port}}}} --bind 127.0.0.1"


def rows_of(tmp_path: Path, daemon: str, table: str, name: str = "f.md") -> tuple[RowSpec, ...]:
    path = tmp_path / name
    path.write_text(f"---\ndaemon: {daemon}\n---\n\n| Name | Command | CEL |\n|---|---|---|\n{table}", encoding="utf-8")
    return parse_file(path).rows


def test_the_rows_reach_the_daemon_on_its_port_and_it_is_stopped_after(
    tmp_path: Path, containment: Containment
) -> None:
    rows = rows_of(tmp_path, f"'{SERVE}'", '| get | echo {{ .port }} $PORT | stdout.trim().split(" ")[0] != "" |\n')
    with running_daemons(rows, containment) as daemons:
        (started,) = daemons.values()
        assert started.error is None and started.port is not None
        with socket.create_connection(("127.0.0.1", started.port), timeout=5):
            pass  # it serves
        result = run_row(rows[0], RunSettings(run_id="r", daemons=daemons), containment)
        assert result.status == "PASS", result
        assert result.samples[0].stdout.split() == [str(started.port)] * 2  # {{ .port }} and $PORT agree
    assert gone_soon(int((tmp_path / "daemon.pid").read_text()))


def test_a_daemon_that_exits_makes_its_files_rows_err_with_its_output(tmp_path: Path, containment: Containment) -> None:
    rows = rows_of(tmp_path, "{command: 'echo no config here >&2; exit 3', ready: 5s}", "| a | true | |\n")
    with running_daemons(rows, containment) as daemons:
        (started,) = daemons.values()
        result = run_row(rows[0], RunSettings(run_id="r", daemons=daemons), containment)
    assert started.port is None and started.error is not None
    assert started.error.startswith(f"daemon ({rows[0].file}:2) exited with code 3 before port ")
    assert started.error.endswith("its output ended: no config here")
    assert (result.status, result.error, result.samples) == ("ERR", started.error, ())


def test_a_daemon_that_never_listens_is_stopped_after_its_ready_time(tmp_path: Path, containment: Containment) -> None:
    rows = rows_of(tmp_path, "{command: 'echo $$ > pid; exec sleep 60', ready: 0.5s}", "| a | true | |\n")
    with running_daemons(rows, containment) as daemons:
        (started,) = daemons.values()
    assert started.error is not None and "did not accept connections on port " in started.error
    assert started.error.endswith("within 0.5s")
    assert gone_soon(int((tmp_path / "pid").read_text()))


def test_a_row_without_its_daemon_started_is_err_not_run(tmp_path: Path, containment: Containment) -> None:
    (row,) = rows_of(tmp_path, f"'{SERVE}'", "| a | touch ran | |\n")
    result = run_row(row, RunSettings(run_id="r"), containment)
    assert result.status == "ERR" and "not started" in str(result.error)
    assert not (tmp_path / "ran").exists()


def test_files_without_a_daemon_start_nothing(tmp_path: Path, containment: Containment) -> None:
    path = tmp_path / "plain.md"
    path.write_text("| Name | Command |\n|---|---|\n| a | true |\n", encoding="utf-8")
    with running_daemons(parse_file(path).rows, containment) as daemons:
        assert daemons == {}
