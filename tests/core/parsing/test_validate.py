"""Checking a whole matrix before anything runs (``fixtures_core.parsing.validate``).

Fixtures are written to real files and parsed; every expected error names file, line and field.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.parser import parse_file
from fixtures_core.parsing.validate import isolate_row_errors, validate_matrix, validate_paths
from fixtures_core.spec import Matrix


def matrix_of(tmp_path: Path, **files: str) -> tuple[Matrix, dict[str, str]]:
    """Write each ``name=text`` as ``name.md``; return the matrix and each file's display path."""
    paths = {}
    for name, text in files.items():
        path = tmp_path / f"{name}.md"
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        paths[name] = path.as_posix()
    return Matrix(files=tuple(parse_file(p) for p in paths.values())), paths


def messages(errors: list[FixtureError]) -> list[str]:
    return [str(e) for e in errors]


METRIC = """
---
exec: echo
metrics:
  - name: duration_ms
    extract: json.duration
    unit: ms
    aggregate: median
    direction: lower
    baseline: API high
    threshold:
      regressionPercent: 25
---
| Name | selector | CEL |
|---|---|---|
| API high | api | json.ok && selector == "api" |
| CLI high | cli | json.ok |
"""


def test_valid_matrix_has_no_errors(tmp_path: Path) -> None:
    matrix, _ = matrix_of(tmp_path, suite=METRIC)
    assert validate_matrix(matrix) == []


def test_self_baseline_inherited_from_frontmatter_is_skipped(tmp_path: Path) -> None:
    # "API high" inherits "baseline: API high": it is the baseline, not an error.
    matrix, _ = matrix_of(tmp_path, suite=METRIC)
    assert [m.baseline for m in matrix.rows[0].metrics] == ["API high"]
    assert validate_matrix(matrix) == []


# --- rows -----------------------------------------------------------------------


def test_duplicate_row_name_names_the_second_line(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: echo
        ---
        | Name |
        |---|
        | twin |
        | other |
        | twin |
        """,
    )
    (error,) = validate_matrix(matrix)
    assert str(error) == f"{paths['suite']}:8: Name: duplicate row name 'twin' (first at line 6)"
    assert (error.line, error.field) == (8, "Name")


def test_duplicate_name_between_a_table_and_a_block(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path, suite="---\nexec: echo\n---\n| Name |\n|---|\n| twin |\n\n### command: twin\n\n```bash\necho\n```\n"
    )
    assert messages(validate_matrix(matrix)) == [
        f"{paths['suite']}:8: Name: duplicate row name 'twin' (first at line 6)"
    ]


def test_same_row_name_in_two_files_is_not_a_duplicate(tmp_path: Path) -> None:
    row = "---\nexec: echo\n---\n| Name |\n|---|\n| same |\n"
    matrix, _ = matrix_of(tmp_path, a=row, b=row)
    assert validate_matrix(matrix) == []


def test_unknown_template_name_in_args_lists_known_names(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: tool
        args: ["--model", "{{ .modle }}"]
        ---
        | Name | model |
        |---|---|
        | a | m1 |
        """,
    )
    (error,) = validate_matrix(matrix)
    assert str(error).startswith(f"{paths['suite']}:7: command: row 'a': unknown template name '.modle'")
    assert "(known: CWD, GIT_ROOT_DIR, GOARCH, GOOS, GOPATH, GO_ROOT_DIR, ROOT_DIR, model, name, sample," in str(error)
    assert error.field == "command"


def test_unknown_template_name_in_env_and_cwd(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: tool
        env:
          TOKEN: "{{ .secret }}"
        cwd: "{{ .workdir }}/x"
        ---
        | Name |
        |---|
        | a |
        """,
    )
    errors = validate_matrix(matrix)
    assert [(e.line, e.field) for e in errors] == [(9, "env.TOKEN"), (9, "cwd")]
    assert "unknown template name '.secret'" in str(errors[0])
    assert "unknown template name '.workdir'" in str(errors[1])


def test_unknown_template_name_in_a_block_script(tmp_path: Path) -> None:
    matrix, paths = matrix_of(tmp_path, suite="### command: a\n\n```bash\necho {{ .nope }}\n```\n")
    (error,) = validate_matrix(matrix)
    assert str(error).startswith(f"{paths['suite']}:1: command: row 'a': unknown template name '.nope'")


def test_known_template_names_pass(tmp_path: Path) -> None:
    matrix, _ = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: "{{ .sourceDir }}/tool"
        args: ["{{ .name }}", "{{.sample}}", "{{ .tmpdir }}", "{{ .prompt }}", "{{ .region }}"]
        env:
          OUT: "{{ .tmpdir }}/out"
        cwd: "{{ .sourceDir }}"
        region: eu
        ---
        | Name | prompt |
        |---|---|
        | a | hi |
        """,
    )
    assert validate_matrix(matrix) == []


def test_unsupported_template_action_is_an_error(tmp_path: Path) -> None:
    matrix, paths = matrix_of(tmp_path, suite="| Name | Command |\n|---|---|\n| a | `echo {{ range .x }}` |\n")
    (error,) = validate_matrix(matrix)
    assert str(error).startswith(
        f"{paths['suite']}:3: command: row 'a': unsupported template action 'range' in {{{{ range .x }}}}"
    )


def test_port_without_a_daemon_is_named_with_where_it_comes_from(tmp_path: Path) -> None:
    matrix, paths = matrix_of(tmp_path, suite="| Name | Command |\n|---|---|\n| a | `curl localhost:{{.port}}` |\n")
    (error,) = validate_matrix(matrix)
    assert "unknown template name '.port'" in str(error)
    assert "a frontmatter daemon: sets it (this file has none)" in str(error)


def test_builtin_names_and_env_variables_are_known_to_templates_and_cel(tmp_path: Path) -> None:
    matrix, _paths = matrix_of(
        tmp_path,
        suite="---\nenv:\n  TOKEN: t\n---\n| Name | Command | CEL |\n|---|---|---|\n"
        "| a | `echo {{ .GIT_ROOT_DIR }} {{ .TOKEN }} {{ .name \\| strings.ToUpper }}` "
        '| `GOOS == "linux" && TOKEN == "t" && name == "a" && ansi.has_any == false && sourceDir != ""` |\n',
    )
    assert validate_matrix(matrix) == []


# --- CEL ---------------------------------------------------------------------------


def test_cel_compile_error_at_the_row_line_with_field_cel(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path, suite="---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| ok | true |\n| bad | json.x == |\n"
    )
    (error,) = validate_matrix(matrix)
    assert str(error).startswith(f"{paths['suite']}:7: CEL: column 10: Syntax error")
    assert str(error).endswith("in 'json.x =='")
    assert (error.line, error.field) == (7, "CEL")
    assert "INVALID_ARGUMENT" not in str(error)


def test_cel_reserved_word_error_suggests_index_syntax(tmp_path: Path) -> None:
    matrix, _ = matrix_of(
        tmp_path, suite="---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| a | json.usage.in > 0 |\n"
    )
    (error,) = validate_matrix(matrix)
    assert 'write json.usage["in"] instead of json.usage.in' in str(error)


def test_cel_sees_row_properties_as_variables(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: echo
        effort: high
        ---
        | Name | selector | prompt file | CEL |
        |---|---|---|---|
        | known | api | p | `selector == "api" && effort == "high" && properties["prompt file"] == "p"` |
        | unknown | api | p | `selektor == "api"` |
        """,
    )
    (error,) = validate_matrix(matrix)
    assert str(error).startswith(f"{paths['suite']}:8: CEL: column 1: undeclared reference to 'selektor'")


def test_block_cel_error_is_at_the_block_heading(tmp_path: Path) -> None:
    matrix, paths = matrix_of(tmp_path, suite="# T\n\n### command: a\n\n```bash\necho\n```\n\n- cel: json.x ==\n")
    (error,) = validate_matrix(matrix)
    assert str(error).startswith(f"{paths['suite']}:3: CEL: ")


def test_indeterminate_expression_is_compiled(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path, suite="---\nexec: echo\nindeterminate: json.x ==\n---\n| Name |\n|---|\n| a |\n"
    )
    (error,) = validate_matrix(matrix)
    assert str(error).startswith(f"{paths['suite']}:7: indeterminate: column 10: Syntax error")


def test_metric_extract_compile_error_is_reported_once_at_the_metric_line(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: echo
        metrics:
          - name: ok
            extract: json.ok
            unit: s
          - name: tokens
            extract: json.usage.in
            unit: tokens
        ---
        | Name |
        |---|
        | a |
        | b |
        | c |
        """,
    )
    (error,) = validate_matrix(matrix)  # three rows inherit the metric: one error
    assert str(error).startswith(f"{paths['suite']}:7: metrics[tokens].extract: column ")  # the list item line
    assert 'json.usage["in"]' in str(error)
    assert error.field == "metrics[tokens].extract"


def test_all_errors_are_collected_in_file_order(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        a="---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| x | bad == |\n| x | true |\n",
        b="---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| y | nope |\n",
    )
    errors = validate_matrix(matrix)
    assert [(e.path, e.line, e.field) for e in errors] == [
        (paths["a"], 6, "CEL"),
        (paths["a"], 7, "Name"),
        (paths["b"], 6, "CEL"),
    ]


def test_row_errors_stay_on_their_rows_and_the_other_rows_run(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        a="---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| x | bad == |\n| x | true |\n| ok | true |\n",
    )
    isolated = isolate_row_errors(matrix)
    assert [f.errors for f in isolated.files] == [()]
    assert [(row.name, row.error) for row in isolated.rows] == [
        ("x", f"{paths['a']}:6: CEL: {validate_matrix(matrix)[0].message}"),
        ("x (line 7)", f"{paths['a']}:7: Name: duplicate row name 'x' (first at line 6)"),
        ("ok", None),
    ]


def test_validate_paths_lists_every_error_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("---\nexec: [\n---\n| Name |\n|---|\n| x |\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("| Name | Exit Code |\n|---|---|\n| y | z |\n| w | q |\n", encoding="utf-8")
    (tmp_path / "c.md").write_text("---\nrepat: 3\nrepaet: 2\ntimeout: soon\n---\n| Name |\n|---|\n| v |\n")
    matrix, errors = validate_paths([str(tmp_path)])
    assert [e.split("/")[-1].split(":")[:3] for e in errors] == [
        ["a.md", "2", " invalid YAML in frontmatter"],
        ["b.md", "3", " Exit Code"],
        ["b.md", "4", " Exit Code"],
        ["c.md", "2", " repat"],  # every error of the frontmatter, not only the first
        ["c.md", "3", " repaet"],
        ["c.md", "4", " timeout"],
    ]
    assert [row.name for row in matrix.rows] == ["x", "y", "w", "v"]  # a broken file's rows are there, ERR


# --- metrics and baselines ---------------------------------------------------------------


def test_duplicate_metric_names(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: echo
        metrics:
          - {name: t, extract: json.t, unit: s}
          - {name: t, extract: json.t2, unit: s}
        ---
        | Name |
        |---|
        | a |
        | b |
        """,
    )
    assert messages(validate_matrix(matrix)) == [f"{paths['suite']}:5: metrics: duplicate metric name 't'"]


def test_missing_baseline_row(tmp_path: Path) -> None:
    matrix, paths = matrix_of(tmp_path, suite=METRIC.replace("baseline: API high", "baseline: API hihg"))
    errors = validate_matrix(matrix)
    assert messages(errors) == [
        f"{paths['suite']}:4: metrics[duration_ms].baseline: row 'API high' (line 15): baseline row 'API hihg' "
        "not found (rows: API high, CLI high)",
        f"{paths['suite']}:4: metrics[duration_ms].baseline: row 'CLI high' (line 16): baseline row 'API hihg' "
        "not found (rows: API high, CLI high)",
    ]


def test_ambiguous_baseline_row_in_two_files(tmp_path: Path) -> None:
    other = (
        "---\nexec: echo\nmetrics:\n  - {name: duration_ms, extract: json.d, unit: ms}\n---\n"
        "| Name |\n|---|\n| API high |\n"
    )
    matrix, paths = matrix_of(tmp_path, suite=METRIC, other=other)
    errors = validate_matrix(matrix)
    (error,) = [e for e in errors if "CLI high" in str(e)]
    assert str(error) == (
        f"{paths['suite']}:4: metrics[duration_ms].baseline: row 'CLI high' (line 16): baseline row 'API high' "
        f"is ambiguous ({paths['suite']}:15, {paths['other']}:8)"
    )
    # The suite's own "API high" names itself: skipped, so the ambiguity is reported for "CLI high" only.
    assert len(errors) == 1


def test_baseline_row_without_the_metric(tmp_path: Path) -> None:
    matrix, paths = matrix_of(
        tmp_path,
        suite="""
        ---
        exec: echo
        ---
        | Name |
        |---|
        | base |

        ### command: candidate

        ```yaml
        metrics:
          - {name: t, extract: json.t, unit: s, baseline: base}
        ```

        ```bash
        echo
        ```
        """,
    )
    assert messages(validate_matrix(matrix)) == [
        f"{paths['suite']}:12: metrics[t].baseline: row 'candidate' (line 8): baseline row 'base' has no metric 't'"
    ]


def spec_pair(tmp_path: Path, base: str, candidate: str) -> tuple[list[FixtureError], dict[str, str]]:
    """A 'base' file and a 'cand' file whose metric 't' uses ``base`` and ``candidate`` extra keys."""
    matrix, paths = matrix_of(
        tmp_path,
        base=f"---\nexec: echo\nmetrics:\n  - {{name: t, extract: json.t, {base}}}\n---\n| Name |\n|---|\n| base |\n",
        cand=(
            f"---\nexec: echo\nmetrics:\n  - {{name: t, extract: json.t, baseline: base, {candidate}}}\n---\n"
            "| Name |\n|---|\n| cand |\n"
        ),
    )
    return validate_matrix(matrix), paths


def test_unit_mismatch_with_the_baseline_is_actionable(tmp_path: Path) -> None:
    errors, paths = spec_pair(tmp_path, "unit: s", "unit: ms")
    assert messages(errors) == [
        f"{paths['cand']}:4: metrics[t].baseline: row 'cand' (line 8): metric 't' has unit 'ms' but baseline row "
        "'base' has 's': both sides must match"
    ]


def test_aggregate_mismatch_with_the_baseline(tmp_path: Path) -> None:
    errors, _ = spec_pair(tmp_path, "unit: s, aggregate: p95", "unit: s")
    (error,) = errors
    assert "metric 't' has aggregate 'mean' but baseline row 'base' has 'p95': both sides must match" in str(error)


def test_direction_mismatch_with_the_baseline(tmp_path: Path) -> None:
    errors, _ = spec_pair(tmp_path, "unit: s, direction: higher", "unit: s, direction: lower")
    (error,) = errors
    assert "metric 't' has direction 'lower' but baseline row 'base' has 'higher'" in str(error)


def test_matching_specs_with_different_thresholds_are_fine(tmp_path: Path) -> None:
    errors, _ = spec_pair(
        tmp_path, "unit: s, direction: lower", "unit: s, direction: lower, threshold: {regressionPercent: 5, max: 9}"
    )
    assert errors == []
