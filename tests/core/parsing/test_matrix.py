"""From command-line paths to the rows a run executes (``fixtures_core.parsing.matrix``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError, UsageError
from fixtures_core.parsing.matrix import fixture_paths, load_matrix, samples_at_once, select
from fixtures_core.spec import Matrix

TABLE = "---\nexec: echo\nrepeat: 2\n---\n| Name |\n|---|\n{rows}"


def fixture(path: Path, *names: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TABLE.format(rows="".join(f"| {n} |\n" for n in names)), encoding="utf-8")
    return path


def test_folder_is_searched_recursively_for_markdown_in_sorted_order(tmp_path: Path) -> None:
    fixture(tmp_path / "suite" / "b.md", "b1")
    fixture(tmp_path / "suite" / "a.md", "a1", "a2")
    fixture(tmp_path / "suite" / "nested" / "c.md", "c1")
    (tmp_path / "suite" / "notes.txt").write_text("| Name |\n|---|\n| not a fixture |\n")
    matrix = load_matrix([str(tmp_path / "suite")])
    assert [Path(f.path).relative_to(tmp_path).as_posix() for f in matrix.files] == [
        "suite/a.md",
        "suite/b.md",
        "suite/nested/c.md",
    ]
    assert [r.name for r in matrix.rows] == ["a1", "a2", "b1", "c1"]


def test_hidden_folders_below_a_named_folder_are_not_searched(tmp_path: Path) -> None:
    fixture(tmp_path / "a.md", "a")
    fixture(tmp_path / ".venv" / "pkg" / "LICENSE.md", "vendored")
    fixture(tmp_path / ".git" / "x.md", "git")
    assert [r.name for r in load_matrix([str(tmp_path)]).rows] == ["a"]


def test_a_named_hidden_folder_is_searched(tmp_path: Path) -> None:
    fixture(tmp_path / ".fixtures" / "a.md", "a")
    assert [r.name for r in load_matrix([str(tmp_path / ".fixtures")]).rows] == ["a"]


def test_files_and_folders_are_combined_in_argument_order(tmp_path: Path) -> None:
    single = fixture(tmp_path / "z.md", "z")
    fixture(tmp_path / "dir" / "a.md", "a")
    matrix = load_matrix([str(single), str(tmp_path / "dir")])
    assert [r.name for r in matrix.rows] == ["z", "a"]


def test_a_file_reached_twice_is_read_once(tmp_path: Path) -> None:
    path = fixture(tmp_path / "dir" / "a.md", "a")
    found = fixture_paths([str(path), str(tmp_path / "dir"), str(path)])
    assert found == [path]


def test_a_named_file_need_not_end_in_md(tmp_path: Path) -> None:
    path = fixture(tmp_path / "suite.fixture", "x")
    assert [r.name for r in load_matrix([str(path)]).rows] == ["x"]


def test_nonexistent_path_is_a_fixture_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.md")
    with pytest.raises(FixtureError) as caught:
        load_matrix([missing])
    assert str(caught.value) == f"{missing}: no such fixture file or folder"


def test_folder_without_fixtures_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no fixture files found in"):
        load_matrix([str(tmp_path / "empty")])


def test_a_file_that_cannot_be_read_as_a_whole_makes_its_own_rows_err_and_the_others_run(tmp_path: Path) -> None:
    fixture(tmp_path / "a.md", "ok")
    (tmp_path / "b.md").write_text("---\nexec: [\n---\n| Name |\n|---|\n| x |\n", encoding="utf-8")
    (tmp_path / "c.md").write_text("---\nrepat: 2\n---\n| Name |\n|---|\n| y |\n| z |\n", encoding="utf-8")
    (tmp_path / "d.md").write_bytes(b"| Name |\n|---|\n| \xff |\n")  # no row can be read: one for the file

    matrix = load_matrix([str(tmp_path)])

    rows = {row.name: row.error for row in matrix.rows}
    assert rows["ok"] is None
    assert (rows["x"] or "").startswith(f"{tmp_path / 'b.md'}:2: invalid YAML in frontmatter: ")
    assert rows["y"] == rows["z"] == f"{tmp_path / 'c.md'}:2: repat: unknown key 'repat' (did you mean 'repeat'?)"
    assert rows["d.md"] == f"{tmp_path / 'd.md'}:3: not UTF-8 text (byte 17)"  # 9 + 6 + 2 bytes before it
    assert [f.errors for f in matrix.files][2] == (rows["y"],)


def test_a_broken_row_does_not_stop_loading(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("---\nexec: echo\n---\n| Name | Exit Code |\n|---|---|\n| bad | x |\n| ok | 0 |\n")
    bad, ok = load_matrix([str(tmp_path)]).rows
    assert bad.error is not None and "b.md:6: Exit Code: must be an integer" in bad.error
    assert ok.error is None


# --- select ----------------------------------------------------------------------


def test_select_without_options_keeps_everything(tmp_path: Path) -> None:
    matrix = load_matrix([str(fixture(tmp_path / "a.md", "API high", "CLI high"))])
    assert select(matrix) == matrix


def test_filter_glob_keeps_matching_rows_only(tmp_path: Path) -> None:
    fixture(tmp_path / "a.md", "API high", "CLI high", "API low")
    fixture(tmp_path / "b.md", "CLI low")
    selected = select(load_matrix([str(tmp_path)]), ("API *",))
    assert [r.name for r in selected.rows] == ["API high", "API low"]
    assert [len(f.rows) for f in selected.files] == [2, 0]


def test_filters_are_a_union_of_their_globs(tmp_path: Path) -> None:
    # --filter 'F2*' --filter 'F5*': rows matching either, never only the last glob
    matrix = load_matrix([str(fixture(tmp_path / "a.md", "F1 a", "F2 b", "F5 c", "F6 d"))])
    assert [r.name for r in select(matrix, ("F2*", "F5*")).rows] == ["F2 b", "F5 c"]


def test_filters_matching_nothing_name_every_glob(tmp_path: Path) -> None:
    matrix = load_matrix([str(fixture(tmp_path / "a.md", "x"))])
    with pytest.raises(UsageError, match=r"--filter 'a\*', 'b\*' matches no row"):
        select(matrix, ("a*", "b*"))


def test_parallel_samples_opts_in_only_the_rows_that_do_not_say_serial(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text(
        "| Name | Command | Serial |\n|---|---|---|\n| unsaid | `true` | |\n| said | `true` | true |\n"
        "| opted | `true` | false |\n",
        encoding="utf-8",
    )
    matrix = load_matrix([str(path)])
    assert [r.serial for r in matrix.rows] == [None, True, False]
    assert [r.samples_in_order for r in matrix.rows] == [True, True, False]  # seed 01: in order by default
    assert [r.samples_in_order for r in samples_at_once(matrix).rows] == [False, True, False]


def test_filter_glob_is_case_sensitive(tmp_path: Path) -> None:
    matrix = load_matrix([str(fixture(tmp_path / "a.md", "API high", "api high"))])
    assert [r.name for r in select(matrix, ("api*",)).rows] == ["api high"]


def test_repeat_override_applies_to_every_selected_row(tmp_path: Path) -> None:
    matrix = load_matrix([str(fixture(tmp_path / "a.md", "x", "y"))])
    assert [r.repeat for r in matrix.rows] == [2, 2]
    assert [r.repeat for r in select(matrix, repeat=7).rows] == [7, 7]
    assert [(r.name, r.repeat) for r in select(matrix, ("y",), repeat=1).rows] == [("y", 1)]


def test_filter_matching_nothing_is_a_usage_error(tmp_path: Path) -> None:
    matrix = load_matrix([str(fixture(tmp_path / "a.md", "x"))])
    with pytest.raises(UsageError, match=r"--filter 'nothing\*' matches no row"):
        select(matrix, ("nothing*",))


def test_fixtures_without_rows_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "prose.md").write_text("# Only prose\n", encoding="utf-8")
    with pytest.raises(UsageError, match="the fixtures contain no rows"):
        select(load_matrix([str(tmp_path)]))


# --- a subset of a devlyn benchmark, as devlyn's users name it -------------------------------

EXAMPLE_BENCH = Path(__file__).resolve().parents[3] / "examples" / "devlyn"


def cases_of(matrix: Matrix) -> list[str]:
    return list(dict.fromkeys(row.ab.case for row in matrix.rows if row.ab is not None))


@pytest.mark.parametrize("given", [["F2", "F9"], ["F2-count-words", "F9-e2e-version"], ["F9", "F2-count-words"]])
def test_fixture_ids_after_a_benchmark_run_only_those_fixtures(given: list[str]) -> None:
    for bench in (str(EXAMPLE_BENCH), str(EXAMPLE_BENCH / "suite.md")):  # the folder, or a suite file naming it
        assert cases_of(load_matrix([bench, *given])) == ["F2-count-words", "F9-e2e-version"]


def test_a_fixture_id_that_names_no_fixture_is_a_usage_error_naming_the_fixtures() -> None:
    with pytest.raises(UsageError, match=r"^F7: no such fixture in .*devlyn \(its fixtures: F1-loud-flag, F2-count"):
        load_matrix([str(EXAMPLE_BENCH), "F7"])
    with pytest.raises(UsageError, match=r"^F2: a fixture id names a fixture of a benchmark: give its folder too"):
        load_matrix(["F2"])


def test_filter_on_a_fixture_id_keeps_its_arms() -> None:
    matrix = load_matrix([str(EXAMPLE_BENCH)])
    assert cases_of(select(matrix, ["F2"])) == ["F2-count-words"]
    assert cases_of(select(matrix, ["F8-known-limit-docstring", "F9*"])) == [
        "F8-known-limit-docstring",
        "F9-e2e-version",
    ]
    assert len(select(matrix, ["F2"]).rows) == 3  # variant, solo_claude, bare
    with pytest.raises(UsageError, match="matches no row"):
        select(matrix, ["F"])  # a short id is F and a number: F matches no fixture
