"""Gavel's built-in names and their values (``fixtures_core.parsing.builtins``)."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.parsing.builtins import SUITE_TEMPLATE_BUILTINS, platform_values, suite_template_values


def test_roots_are_the_nearest_git_and_go_module_folders(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    module = tmp_path / "svc"
    (module / "fixtures").mkdir(parents=True)
    (module / "go.mod").write_text("module x\n")
    values = platform_values(str(module / "fixtures"))
    assert (values["GIT_ROOT_DIR"], values["GO_ROOT_DIR"], values["ROOT_DIR"]) == (
        str(tmp_path),
        str(module),
        str(tmp_path),
    )


def test_root_dir_falls_back_to_the_go_module_then_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    values = platform_values(str(folder))  # the temporary folder has no .git or go.mod above it
    assert (values["GIT_ROOT_DIR"], values["GO_ROOT_DIR"], values["ROOT_DIR"]) == ("", "", str(folder))
    (folder / "go.mod").write_text("module x\n")
    assert platform_values(str(folder / "."))["ROOT_DIR"] == str(folder)


def test_a_suite_template_sees_its_properties_and_exactly_the_suite_builtins() -> None:
    values = suite_template_values({"model": "m1"}, "case-1", "/fixtures")
    assert values == {"model": "m1", "name": "case-1", "sourceDir": "/fixtures"}
    assert set(values) - {"model"} == set(SUITE_TEMPLATE_BUILTINS)
