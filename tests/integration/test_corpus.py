"""A corpus of hostile input and faults, thrown at the command line as a user would.

For every case: the documented exit code (2 for every error), the documented
lines on stderr (one ``error:`` line; a usage error adds its ``usage:``
line), no traceback, no process left running, and no run document lost or
corrupt (every run folder holds a ``run.json`` that loads, or the case says
the run stops before it can). Cases run in process through
``flows.run.main(argv)`` on the local engine; what depends on the engine
(signals, containment) runs on both, in ``test_interrupts.py``.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixtures_core.records.rundoc import load_run
from flows.cli.main import main
from tests.processes import processes_with

Prepare = Callable[[Path], list[str]]


@dataclass(frozen=True)
class Case:
    """One hostile input: build it under a folder, run ``assay ARGV``, expect ``code`` and ``says`` on stderr."""

    id: str
    prepare: Prepare
    code: int = 2
    says: str | None = None  # a fragment of the error line
    usage: bool = False  # a usage error: the usage line, then the error line
    runs: int | None = None  # run documents expected in the state folder (None: not checked)
    planted: bool = False  # the case corrupted the state folder on purpose: only its new runs are checked
    row: bool = False  # the error is one row's: that row is ERR saying ``says`` in the report, the rest run


def fixture(text: str | bytes, name: str = "f.md", *extra: str) -> Prepare:
    """A fixture file with this text, run with the local engine (``{dir}`` is the folder)."""

    def prepare(folder: Path) -> list[str]:
        path = folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text.replace("{dir}", str(folder)), encoding="utf-8")
        return ["run", str(path), "--engine", "local", *extra]

    return prepare


def table(*rows: str, front: str = "") -> str:
    """A fixture with optional frontmatter and a Name | Command (| CEL) table."""
    head = f"---\n{front}---\n\n" if front else ""
    return head + "| Name | Command | CEL |\n|---|---|---|\n" + "".join(f"| {row} |\n" for row in rows)


def command(script: str, cel: str = "", name: str = "a", front: str = "") -> str:
    """A fixture with one command block running ``script`` in bash."""
    head = f"---\n{front}---\n\n" if front else ""
    bullet = f"- cel: {cel}\n" if cel else ""
    return f"{head}### command: {name}\n\n```bash\n{script}\n```\n\n{bullet}"


def args(*argv: str) -> Prepare:
    """Command-line arguments (``{ok}`` is a passing fixture, ``{dir}`` the folder)."""

    def prepare(folder: Path) -> list[str]:
        ok = folder / "ok.md"
        ok.write_text(table("a | `true` | `exitCode == 0`"))
        return [a.replace("{ok}", str(ok)).replace("{dir}", str(folder)) for a in argv]

    return prepare


def with_files(files: dict[str, str | bytes], *argv: str) -> Prepare:
    """Files written first (text or bytes; ``fifo:`` makes a FIFO), then ``args(*argv)``."""

    def prepare(folder: Path) -> list[str]:
        for name, content in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if content == "fifo:":
                os.mkfifo(path)
            elif isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content.replace("{dir}", str(folder)), encoding="utf-8", errors="surrogatepass")
        return args(*argv)(folder)

    return prepare


def baseline(document: object | str, *extra: str) -> Prepare:
    """``--baseline`` pointing at a file holding this document (JSON-encoded unless a string)."""
    text = document if isinstance(document, str) else json.dumps(document)
    return with_files({"base.json": text}, "run", "{ok}", "--engine", "local", "--baseline", "{dir}/base.json", *extra)


def saved_run(folder: Path) -> Path:
    """A real run's document, saved under the folder's state (to mutate into a bad baseline)."""
    ok = folder / "ok.md"
    ok.write_text(table("a | `true` | `exitCode == 0`"))
    assert main(["run", str(ok), "--engine", "local"]) == 0
    return folder / ".assay" / "latest.json"


def mutated_baseline(change: Callable[[dict[str, object]], None], says: str) -> Prepare:
    def prepare(folder: Path) -> list[str]:
        document = json.loads(saved_run(folder).read_text())
        change(document)
        (folder / "base.json").write_text(json.dumps(document))
        return ["run", str(folder / "ok.md"), "--engine", "local", "--baseline", str(folder / "base.json")]

    return prepare


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


BOMB = "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" if i else 'l0: &l0 ["lol", "lol", "lol", "lol"]\n'
    for i in range(9)
)
OK_ROW = "a | `true` | `exitCode == 0`"
METRIC_M = "metrics:\n  - {name: m, extract: json.m, unit: x}\n"
SLEEPER = "{dir}/sleep.pid"


def _bad_baselines() -> list[Case]:
    def set_key(key: str, value: object) -> Callable[[dict[str, object]], None]:
        return lambda document: document.__setitem__(key, value)

    def row_field(key: str, value: object) -> Callable[[dict[str, object]], None]:
        def change(document: dict[str, object]) -> None:
            document["fixtures"][0]["rows"][0][key] = value  # type: ignore[index]

        return change

    return [
        Case(
            "baseline missing",
            args("run", "{ok}", "--engine", "local", "--baseline", "{dir}/nope.json"),
            says="nope.json: no such run file",
        ),
        Case("baseline not JSON", baseline("{not json"), says="not JSON"),
        Case("baseline empty file", baseline(""), says="not JSON"),
        Case("baseline a JSON list", baseline([1, 2]), says="not an assay.run/v1 run document"),
        Case("baseline other schema", baseline({"schema": "x/v9"}), says="not an assay.run/v1"),
        Case("baseline schema a dict", baseline({"schema": {"a": 1}}), says="not an assay.run/v1"),
        Case(
            "baseline nested 10,000 deep",
            baseline('{"schema": "assay.run/v1", "x": ' + nested(10_000) + "}"),
            says="nested deeper",
        ),
        Case(
            "baseline a 5000-digit int",
            baseline('{"schema": "assay.run/v1", "n": ' + "9" * 5000 + "}"),
            says="more than 4300 digits",
        ),
        Case(
            "baseline not UTF-8",
            with_files(
                {"base.json": b"\xff\xfe{}"}, "run", "{ok}", "--engine", "local", "--baseline", "{dir}/base.json"
            ),
            says="not JSON",
        ),
        Case(
            "baseline a FIFO",
            with_files({"base.json": "fifo:"}, "run", "{ok}", "--engine", "local", "--baseline", "{dir}/base.json"),
            says="FIFO",
        ),
        Case(
            "baseline /dev/zero",
            args("run", "{ok}", "--engine", "local", "--baseline", "/dev/zero"),
            says="character device",
        ),
        Case(
            "baseline a folder",
            args("run", "{ok}", "--engine", "local", "--baseline", "{dir}"),
            says="a folder without run.json",
        ),
        Case(
            "baseline summary a list", mutated_baseline(set_key("summary", [1, 2]), ""), says="malformed run document"
        ),
        Case("baseline fixtures a number", mutated_baseline(set_key("fixtures", 5), ""), says="malformed run document"),
        Case(
            "baseline fixtures of strings",
            mutated_baseline(set_key("fixtures", ["x"]), ""),
            says="malformed run document",
        ),
        Case(
            "baseline row status MAYBE",
            mutated_baseline(row_field("status", "MAYBE"), ""),
            says="malformed run document",
        ),
        Case(
            "baseline row samples a dict",
            mutated_baseline(row_field("samples", {"a": 1}), ""),
            says="malformed run document",
        ),
        Case("baseline row line a string", mutated_baseline(row_field("line", "7"), ""), says="malformed run document"),
        Case(
            "baseline row without a name",
            mutated_baseline(lambda d: d["fixtures"][0]["rows"][0].pop("name"), ""),
            says="malformed run document",
        ),  # type: ignore[index]
        Case(
            "baseline with no rows",
            mutated_baseline(lambda d: d["fixtures"][0].__setitem__("rows", []), ""),
            says="no rows",
        ),  # type: ignore[index]
        Case("baseline sharing no row", mutated_baseline(row_field("name", "other"), ""), says="no row in common"),
        Case(
            "baseline with a huge float", mutated_baseline(row_field("line", 1e308), ""), says="malformed run document"
        ),
    ]


def _corrupt_latest(folder: Path) -> list[str]:
    latest = saved_run(folder)
    latest.unlink()
    latest.write_text('{"schema": "assay.run/v1", "fixtures": 3}')
    return ["run", str(folder / "ok.md"), "--engine", "local", "--baseline", "latest"]


def _history_with_bad_runs(folder: Path) -> list[str]:
    saved_run(folder)
    broken = folder / ".assay" / "runs" / "20990101T000000Z-broken"
    broken.mkdir(parents=True)
    (broken / "run.json").write_text('{"schema": "assay.run/v1", "summary": []}')
    (folder / ".assay" / "runs" / "20990101T000001Z-killed" / "evidence").mkdir(parents=True)
    return ["history"]


def _bless_malformed(folder: Path) -> list[str]:
    (folder / "bad.json").write_text('{"schema": "assay.run/v1", "fixtures": {}}')
    return ["bless", str(folder / "bad.json")]


def _bless_a_failed_run(folder: Path) -> list[str]:
    failing = folder / "failing.md"
    failing.write_text(table("a | `false` | "))
    assert main(["run", str(failing), "--engine", "local"]) == 1
    return ["bless", "latest"]


def _show_malformed(folder: Path) -> list[str]:
    (folder / "bad.json").write_text('{"schema": "assay.run/v1", "fixtures": [{"rows": 1}]}')
    return ["show", str(folder / "bad.json")]


def _compare_malformed(folder: Path) -> list[str]:
    good = saved_run(folder)
    (folder / "bad.json").write_text(json.dumps({"schema": "assay.run/v1", "status": "WHAT"}))
    return ["compare", str(good), str(folder / "bad.json")]


PLANTED_RUN = "20990101T000000.000Z-edited"


def edited_state(edit: Callable[[Path, dict[str, object]], bytes | None]) -> Prepare:
    """A killed run of a one-row fixture (started.json, an evidence folder, no run.json), its state
    edited by ``edit(run folder, start record)`` (which may return the start record's new bytes),
    then ``--resume`` of it on the local engine."""

    def prepare(folder: Path) -> list[str]:
        from fixtures_core.parsing.matrix import load_matrix
        from fixtures_core.records.resume import write_started
        from fixtures_core.records.store import Store

        path = folder / "f.md"
        path.write_text(table(OK_ROW))
        store = Store(folder / ".assay")
        store.prepare_evidence(PLANTED_RUN)
        write_started(store, PLANTED_RUN, "2099-01-01T00:00:00Z", {"paths": [str(path)]}, load_matrix([str(path)]))
        run = store.run_dir(PLANTED_RUN)
        record = json.loads((run / "started.json").read_text())
        raw = edit(run, record)
        (run / "started.json").write_bytes(raw if raw is not None else json.dumps(record).encode())
        return ["run", "--resume", PLANTED_RUN, "--engine", "local"]

    return prepare


def _option(name: str, value: object) -> Callable[[Path, dict[str, object]], bytes | None]:
    return lambda _run, record: record["options"].update({name: value})  # type: ignore[attr-defined,func-returns-value]


def _no_digests(_run: Path, record: dict[str, object]) -> None:
    record["fixtures"] = {}


def _fifo_evidence(run: Path, _record: dict[str, object]) -> None:
    os.mkfifo(run / "evidence" / "0000-a.jsonl")


def _symlinked_evidence(run: Path, _record: dict[str, object]) -> None:
    (run.parent.parent / "elsewhere.jsonl").write_text("")
    (run / "evidence" / "0000-a.jsonl").symlink_to(run.parent.parent / "elsewhere.jsonl")


def _far_sample(run: Path, _record: dict[str, object]) -> None:
    line = {"sample": {"index": 1_000_000, "status": "PASS", "duration_ms": 1.0, "exit_code": 0, "stdout": "",
                       "stderr": "", "command": {"status": "pass"}}}  # fmt: skip
    (run / "evidence" / "0000-a.jsonl").write_text(json.dumps(line) + "\n")


def _not_utf8(_run: Path, _record: dict[str, object]) -> bytes:
    return b'{"schema": "\xff\xfe"}'


CASES: list[Case] = [
    # --- fixtures ---------------------------------------------------------------------------------
    Case(
        "yaml billion laughs",
        fixture("---\n" + BOMB + "---\n\n" + table(OK_ROW)),
        says="aliases expand to more than",
        row=True,
    ),
    Case("yaml alias to itself", fixture(table(OK_ROW, front="a: &a [1, *a]\n")), says="refers to itself", row=True),
    Case(
        "yaml nested 5000 deep (flow)",
        fixture(table(OK_ROW, front=f"x: {nested(5000)}\n")),
        says="nested deeper than",
        row=True,
    ),
    Case(
        "yaml nested 300 deep (block)",
        fixture(table(OK_ROW, front="x:\n" + "".join("  " * i + "-\n" for i in range(1, 300)))),
        says="nested deeper than",
        row=True,
    ),
    Case(
        "yaml aliases nesting past the depth",
        fixture(
            table(
                OK_ROW,
                front="".join(f"a{i}: &a{i} [[[[[[[[*a{i - 1}]]]]]]]]\n" if i else "a0: &a0 [1]\n" for i in range(6)),
            )
        ),
        says="aliases nest values deeper",
        row=True,
    ),
    Case("yaml a 5000-digit integer", fixture(table(OK_ROW, front="n: " + "9" * 5000 + "\n")), says="4300", row=True),
    Case(
        "yaml a NUL character",
        fixture(b"---\nx: \x00\n---\n\n| Name | Command |\n|---|---|\n| a | true |\n"),
        says=":2: frontmatter x: holds a NUL byte",
        row=True,
    ),
    Case(
        "yaml a control character",
        fixture(b"---\nrepeat: 1\nx: \x01\n---\n\n| Name | Command |\n|---|---|\n| a | true |\n"),
        says=":3: invalid YAML in frontmatter: unacceptable character '\\x01'",
        row=True,
    ),
    Case("yaml a tab indentation error", fixture(table(OK_ROW, front="a:\n\t- 1\n")), says="invalid YAML", row=True),
    Case(
        "yaml a python tag",
        fixture(table(OK_ROW, front="x: !!python/object/apply:os.system ['true']\n")),
        says="invalid YAML",
        row=True,
    ),
    Case(
        "frontmatter never closed",
        fixture("---\nrepeat: 2\n\n| Name | Command |\n|---|---|\n| a | true |\n"),
        says="never ends",
        row=True,
    ),
    Case("frontmatter a list", fixture(table(OK_ROW, front="- 1\n- 2\n")), says="must be a YAML map", row=True),
    Case(
        "frontmatter duplicate key",
        fixture(table(OK_ROW, front="repeat: 1\nrepeat: 2\n")),
        says="duplicate key",
        row=True,
    ),
    Case(
        "fixture a FIFO", with_files({"f.md": "fifo:"}, "run", "{dir}/f.md", "--engine", "local"), says="FIFO", row=True
    ),
    Case(
        "fixture a FIFO inside a folder",
        with_files({"sub/f.md": "fifo:"}, "run", "{dir}/sub", "--engine", "local"),
        says="FIFO",
        row=True,
    ),
    Case("fixture /dev/zero", args("run", "/dev/zero", "--engine", "local"), says="character device", row=True),
    Case("fixture /dev/null", args("validate", "/dev/null"), says="character device"),
    Case(
        "fixture over the size limit",
        lambda d: (os.truncate(_touch(d / "big.md"), 17 * 1024 * 1024), ["validate", str(d / "big.md")])[1],
        says="more than the limit",
    ),
    Case(
        "fixture not UTF-8",
        fixture(b"| Name | Command |\n|---|---|\n| \xff\xfe | true |\n"),
        says="not UTF-8",
        row=True,
    ),
    Case("fixture random bytes", fixture(bytes(range(256)) * 4), says="not UTF-8", row=True),
    Case("fixture empty", fixture(""), says="contain no rows"),
    Case(
        "fixture path missing",
        args("run", "{dir}/missing.md", "--engine", "local"),
        says="missing.md: no such fixture file",
    ),
    Case(
        "fixture folder without fixtures",
        with_files({"sub/readme.txt": "x"}, "run", "{dir}/sub", "--engine", "local"),
        says="no fixture files",
    ),
    Case("fixture path too long", args("validate", "/" + "x" * 5000 + ".md"), says=""),
    Case("a row cell missing", fixture("| Name | Command |\n|---|---|\n| a |\n"), code=0, runs=1),  # bash, as Gavel
    Case("a row without a name", fixture(table(" | `true` | ")), says="needs a Name", row=True),
    Case("duplicate row names", fixture(table(OK_ROW, OK_ROW)), says="duplicate row name", row=True),
    Case("a CEL syntax error", fixture(table("a | `true` | `json.x +`")), says="CEL", row=True),
    Case(
        "an unknown template name", fixture(table("a | `echo {{ .nope }}` | ")), says="unknown template name", row=True
    ),
    Case("repeat zero", fixture(table(OK_ROW, front="repeat: 0\n")), says="repeat", row=True),
    Case("repeat a word", fixture(table(OK_ROW, front="repeat: many\n")), says="repeat", row=True),
    Case(
        "timeout 10^30 seconds",
        fixture(table(OK_ROW, front="timeout: 1000000000000000000000000000000\n")),
        says="timeout",
        row=True,
    ),
    Case("timeout negative", fixture(table(OK_ROW, front="timeout: -5s\n")), says="timeout", row=True),
    Case(
        "threshold beyond a double",
        fixture(
            table(OK_ROW, front="metrics:\n  - {name: m, extract: '1', unit: x, threshold: {max: " + "9" * 400 + "}}\n")
        ),
        says="must be a finite number",
        row=True,
    ),
    Case("metrics not a list", fixture(table(OK_ROW, front="metrics: 5\n")), says="list of metric specs", row=True),
    Case(
        "metric with an unknown aggregate",
        fixture(table(OK_ROW, front="metrics:\n  - {name: m, extract: '1', unit: x, aggregate: mode}\n")),
        says="unknown aggregate",
        row=True,
    ),
    Case(
        "a property with a lone surrogate",
        fixture(table(OK_ROW, front='p: "\\ud800"\n')),
        says="lone surrogate",
        row=True,
    ),
    Case(
        "a property key with a lone surrogate",
        fixture(table(OK_ROW, front='p: {"\\udcff": 1}\n')),
        says="lone surrogate",
        row=True,
    ),
    Case(
        "an argument with a NUL byte",
        fixture(table(" a | | ", front='exec: echo\nargs: ["a\\0b"]\n')),
        says="NUL byte",
        row=True,
    ),
    Case(
        "an env value with a NUL byte", fixture(table(OK_ROW, front='env: {A: "x\\0y"}\n')), says="NUL byte", row=True
    ),
    Case(
        "an env name with =",
        fixture(table(OK_ROW, front='env: {"A=B": x}\n')),
        says="invalid environment variable name",
        row=True,
    ),
    Case(
        "an empty env name",
        fixture(table(OK_ROW, front='env: {"": x}\n')),
        says="invalid environment variable name",
        row=True,
    ),
    Case("a cwd with a NUL byte", fixture(table(OK_ROW, front='cwd: "/tmp\\0x"\n')), says="NUL byte", row=True),
    # --- what stored state makes of names ---------------------------------------------------------
    Case(
        "a 300-character row name is recorded",
        fixture(table("n" * 300 + " | `true` | `exitCode == 0`")),
        code=0,
        runs=1,
    ),
    Case("row names a/b and a_b keep apart", fixture(table("a/b | `echo 1` | ", "a_b | `echo 2` | ")), code=0, runs=1),
    Case("a row name of dots", fixture(table(".. | `true` | ")), code=0, runs=1),
    # --- commands -----------------------------------------------------------------------------------
    Case("a command not found", fixture(table("a | `no-such-program-xyz` | ")), says=None, runs=1),
    Case("a command not executable", fixture(table("a | `{dir}/f.md` | ")), says=None, runs=1),
    # As in Gavel, a missing cwd fails the row (its command never ran): a FAIL, not an error.
    Case("a cwd that does not exist", fixture(table(OK_ROW, front="cwd: /nonexistent/dir\n")), code=1, runs=1),
    Case(
        "stdout JSON nested 10,000 deep",
        fixture(command(f"printf '{nested(10_000)}'", "json.size() > 0")),
        says=None,
        runs=1,
    ),
    Case(
        "stdout JSON nested 300 deep", fixture(command(f"printf '{nested(300)}'", "json.size() > 0")), says=None, runs=1
    ),
    Case(
        "a metric of 10^400",
        fixture(command('echo \'{"m": 1' + "0" * 400 + "}'", front=METRIC_M)),
        says=None,
        runs=1,
    ),
    Case(
        "a metric of 5000 digits",
        fixture(command('echo \'{"m": ' + "9" * 5000 + "}'", front=METRIC_M)),
        says=None,
        runs=1,
    ),
    Case(
        "a metric mean past a double",
        fixture(command("echo '{\"m\": 1.7e308}'", front="repeat: 2\n" + METRIC_M)),
        says=None,
        runs=1,
    ),
    Case("stdout not UTF-8", fixture(command("printf '\\xff\\xfe ok'", 'stdout.contains("ok")')), code=0, runs=1),
    Case(
        "stdout of 3 MiB",
        fixture(command("head -c 3145728 /dev/zero | tr '\\0' x", "size(stdout) == 1048576")),
        code=0,
        runs=1,
    ),
    Case("a sample killed by a signal", fixture(command("kill -SEGV $$")), code=1, runs=1),
    Case(
        "a sample closing its pipes past the budget",
        fixture(command("exec >&- 2>&-; sleep 30", front="timeout: 1s\n")),
        says=None,
        runs=1,
    ),
    Case("a daemon with setsid", fixture(command("setsid sleep 60 >/dev/null 2>&1 &\necho ok")), code=0, runs=1),
    Case("a daemon by double fork", fixture(command("( ( sleep 60 >/dev/null 2>&1 & ) & )\necho ok")), code=0, runs=1),
    Case("a daemon by nohup &", fixture(command("nohup sleep 60 >/dev/null 2>&1 &\necho ok")), code=0, runs=1),
    Case(
        "a daemon in its own process group",
        fixture(command("set -m; sleep 60 >/dev/null 2>&1 &\necho ok")),
        code=0,
        runs=1,
    ),
    Case("a daemon holding stdout open", fixture(command("setsid sleep 60 &\necho ok")), code=0, runs=1),
    Case(
        "200 background children", fixture(command("for i in $(seq 200); do sleep 60 & done\necho ok")), code=0, runs=1
    ),
    Case(
        "a sample ignoring SIGTERM past its budget",
        fixture(command("trap '' TERM; sleep 60 & wait", front="timeout: 1s\n")),
        says=None,
        runs=1,
    ),
    # --- values and flags ---------------------------------------------------------------------------
    Case("--repeat abc", args("run", "{ok}", "--repeat", "abc"), usage=True, says="--repeat"),
    Case("--repeat 0", args("run", "{ok}", "--repeat", "0", "--engine", "local"), says="--repeat"),
    Case("--repeat -5", args("run", "{ok}", "--repeat", "-5", "--engine", "local"), says="--repeat"),
    Case("--parallel x", args("run", "{ok}", "--parallel", "x"), usage=True, says="--parallel"),
    Case("--parallel 0", args("run", "{ok}", "--parallel", "0"), says="--parallel"),
    Case("--k 0", args("run", "{ok}", "--k", "0"), says="--k"),
    Case("--k abc", args("run", "{ok}", "--k", "abc"), usage=True, says="--k"),
    Case(
        "--regression-tolerance nan",
        args("run", "{ok}", "--regression-tolerance", "nan"),
        says="--regression-tolerance",
    ),
    Case(
        "--regression-tolerance inf",
        args("run", "{ok}", "--regression-tolerance", "inf"),
        says="--regression-tolerance",
    ),
    Case("--regression-tolerance 2", args("run", "{ok}", "--regression-tolerance", "2"), says="--regression-tolerance"),
    Case(
        "--regression-tolerance x",
        args("run", "{ok}", "--regression-tolerance", "x"),
        usage=True,
        says="--regression-tolerance",
    ),
    Case("--engine x", args("run", "{ok}", "--engine", "x"), says="--engine"),
    Case("an unknown option", args("run", "{ok}", "--bogus"), usage=True, says="--bogus"),
    Case("--json without a value", args("run", "{ok}", "--json"), usage=True, says="--json"),
    Case("--json a folder", args("run", "{ok}", "--json", "{dir}"), says="is a folder"),
    Case(
        "--json on a full disk",
        args("run", "{ok}", "--engine", "local", "--json", "/dev/full"),
        says="cannot write the run document",
        runs=1,
    ),
    Case("--out a file", args("run", "{ok}", "--engine", "local", "--out", "{ok}"), says="is not a folder"),
    Case(
        "--filter matching nothing", args("run", "{ok}", "--engine", "local", "--filter", "zzz*"), says="matches no row"
    ),
    Case(
        "--filter an unclosed bracket",
        args("run", "{ok}", "--engine", "local", "--filter", "[a"),
        says="matches no row",
    ),
    Case(
        "--label with markup", args("run", "{ok}", "--engine", "local", "--label", "[/bold] [link=x]"), code=0, runs=1
    ),
    Case(
        "--label with a lone surrogate", args("run", "{ok}", "--engine", "local", "--label", "x\udcff"), code=0, runs=1
    ),
    Case(
        "--group-by an unknown property", args("run", "{ok}", "--engine", "local", "--group-by", "nope"), code=0, runs=1
    ),
    Case("an unknown command", args("frob"), usage=True, says="frob"),
    Case("no command", args(), usage=True, says="give a command: run, validate, bless"),
    Case("server without a command", args("server"), usage=True, says="give a command: start, stop, status"),
    Case("compare with one run", args("compare", "x"), usage=True, says="CURRENT"),
    Case("bless a missing run", args("bless", "nope"), says="run nope: no such run file"),
    Case("validate nothing", args("validate"), usage=True, says="PATH"),
    Case("history of a missing folder", args("history", "--out", "{dir}/nowhere"), code=0),
    # --- baselines and saved runs -------------------------------------------------------------------
    *_bad_baselines(),
    Case("--baseline latest corrupt", _corrupt_latest, says="latest.json", planted=True),
    Case("history with a malformed and an incomplete run", _history_with_bad_runs, code=0),
    Case("bless a malformed run", _bless_malformed, says="malformed run document"),
    Case("compare with a malformed run", _compare_malformed, says="malformed run document"),
    Case("show a malformed run", _show_malformed, says="malformed run document"),
    Case("bless a failed run without --force", _bless_a_failed_run, says="not blessing run", runs=1),
    # --- inputs of Gavel compatibility, reports and A/B suites ---------------------------------------
    Case(
        "golden file a FIFO",
        with_files(
            {"want.txt": "fifo:", "g.md": "| Name | Command | Stdout |\n|---|---|---|\n| a | echo | @want.txt |\n"},
            "run",
            "{dir}/g.md",
            "--engine",
            "local",
        ),
        says="a FIFO",
        row=True,
    ),
    Case(
        "a skip command with a NUL byte", fixture(table(OK_ROW, front='skip: "true\\0"\n')), says="NUL byte", row=True
    ),
    Case("--progress-interval 0", args("run", "{ok}", "--progress-interval", "0"), says="--progress-interval"),
    Case("--tag with --engine local", args("run", "{ok}", "--engine", "local", "--tag", "t"), says="--tag"),
    Case("--bless with --dry-run", args("run", "{ok}", "--bless", "--dry-run"), says="--bless"),
    Case("--html a folder", args("run", "{ok}", "--engine", "local", "--html", "{dir}"), says="--html"),
    Case("report without a file to write", args("report", "latest"), says="give at least one of"),
    Case("rejudge a missing run", args("rejudge", "nope"), says="run nope: no such run file"),
    # Issue 20: stored state is untrusted input.
    Case(  # issue 31: a start record's report paths are never used; the resumed run writes into its folder
        "resume: html written outside",
        edited_state(_option("html", "/tmp/../etc/evil.html")),
        code=0,
        planted=True,
    ),  # fmt: skip
    Case("resume: repeat a word", edited_state(_option("repeat", "abc")), says="not a valid value", planted=True),
    Case("resume: no fixture digests", edited_state(_no_digests), says="holds no digest", planted=True),
    Case("resume: evidence a FIFO", edited_state(_fifo_evidence), says="not a regular file", planted=True),
    Case("resume: evidence a symlink", edited_state(_symlinked_evidence), says="not a regular file", planted=True),
    Case("resume: a sample index far out", edited_state(_far_sample), says="outside the row's 1", planted=True),
    Case("resume: start record not UTF-8", edited_state(_not_utf8), says="start record", planted=True),
    # Issue 20: bounds before allocation, NUL bytes, a progress interval that never comes.
    Case("repeat 10^30", fixture(table(OK_ROW, front=f"repeat: {10**30}\n")), says="at most 100,000 samples", row=True),
    Case("--repeat 10^30", args("run", "{ok}", "--repeat", str(10**30), "--engine", "local"), says="--repeat"),
    Case("--k 10^30", args("run", "{ok}", "--k", str(10**30), "--engine", "local"), says="--k must be at most"),
    Case("--progress-interval inf", args("run", "{ok}", "--progress-interval", "inf"), says="--progress-interval"),
    Case(
        "a NUL byte templated into an argument",
        fixture(table(" a | | ", front='exec: echo\nargs: ["{{.x}}"]\nx: "a\\0b"\n')),
        runs=1,
    ),
    Case(
        "a NUL byte in stdout hides nothing from CEL",
        fixture(command("printf 'ok\\0 sk-LEAKED error'", cel='!stdout.contains("LEAKED")')),
        code=1,
        runs=1,
    ),
]


def _touch(path: Path) -> Path:
    path.write_text("")
    return path


def test_the_corpus_has_at_least_80_cases() -> None:
    assert len(CASES) >= 80
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input(
    case: Case, tmp_path: Path, marker: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    argv = case.prepare(tmp_path)
    capfd.readouterr()  # what preparing printed
    code = main(argv)
    out, err = capfd.readouterr()
    assert code == case.code, out + err
    assert "Traceback" not in err and "Traceback" not in out
    assert "internal error" not in out, "a fault of the input is said in its own words, never as a bug"
    lines = err.splitlines()
    if case.row:
        assert lines == [], err  # a broken row is reported as an ERR row of the run, not as a failure to start
        assert "ERR" in out and case.says is not None and case.says in out.replace("\n", " "), out
    elif case.code == 2 and case.says is not None:
        expected = ["usage", "error"] if case.usage else ["error"]
        assert [line.split(":")[0] for line in lines] == expected, err
        assert case.says in lines[-1], err
        assert "internal error" not in err
        assert ":0:" not in err, "an error of a whole file names no line"
    elif case.code == 2:
        assert lines == [], err  # an error in a sample: the report (stdout) says it, as an ERR row
        assert "ERR" in out
    else:
        assert lines == [], err
    assert processes_with(marker) == [], "a process of the case outlived it"
    assert_runs_intact(tmp_path / ".assay", case.runs, case.planted)
    assert not Path("/etc/evil.html").exists(), "a planted report path was written"
    if "/dev/full" in argv:
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode), "an output named a device and assay renamed a file over it"


def assert_runs_intact(state: Path, expected: int | None, planted: bool = False) -> None:
    """Every run folder ends with a run.json that loads; latest.json loads too."""
    runs = sorted((state / "runs").iterdir()) if (state / "runs").is_dir() else []
    if expected is not None:
        assert len(runs) == expected
    for folder in runs:
        if folder.name.startswith("20990101"):
            continue  # planted by the case itself
        load_run(folder / "run.json")
    if (state / "latest.json").exists() and not planted:
        load_run(state / "latest.json")
