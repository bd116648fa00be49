"""YAML with limits: alias bombs, recursive aliases and deep nesting are errors with file and line."""

from __future__ import annotations

import pytest
import yaml

from fixtures_core.errors import FixtureError
from fixtures_core.limits import MAX_YAML_DEPTH, MAX_YAML_NODES
from fixtures_core.parsing.safe_yaml import load_yaml

BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)  # 9^9 = 387,420,489 strings once expanded


def load(text: str) -> object:
    return load_yaml(text, "f.md", 2, "frontmatter")[1]


def test_plain_yaml_loads_as_the_safe_loader_would() -> None:
    text = "a: 1\nb: [x, {c: true}]\nd: 2s\n"
    assert load(text) == yaml.safe_load(text)


def test_a_few_aliases_are_fine() -> None:
    assert load("base: &base {x: 1}\none: *base\ntwo: *base\n") == {"base": {"x": 1}, "one": {"x": 1}, "two": {"x": 1}}


def test_the_billion_laughs_is_refused_with_its_line() -> None:
    with pytest.raises(FixtureError) as caught:
        load(BOMB)
    assert str(caught.value).startswith("f.md:")
    assert f"aliases expand to more than {MAX_YAML_NODES:,} values (the limit)" in str(caught.value)


def test_an_alias_to_its_own_anchor_is_refused() -> None:
    with pytest.raises(FixtureError, match="a YAML alias refers to itself"):
        load("a: &a [1, *a]\n")


def test_nesting_at_the_limit_loads_and_one_more_level_is_refused() -> None:
    # The document's own mapping is one level: MAX_YAML_DEPTH - 1 lists inside it still fit.
    fits = "x: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1) + "\n"
    assert load(fits) is not None
    too_deep = "x: " + "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH + "\n"
    with pytest.raises(FixtureError, match=f"f.md:2: invalid YAML in frontmatter: nested deeper than {MAX_YAML_DEPTH}"):
        load(too_deep)


def test_nesting_ten_thousand_deep_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(FixtureError, match="nested deeper than"):
        load("x: " + "[" * 10_000 + "]" * 10_000 + "\n")


def test_aliases_chained_past_the_depth_are_refused() -> None:
    # Each anchor nests the previous one 8 levels deeper: 6 of them go past 32 levels.
    text = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [[[[[[[[*a{i - 1}]]]]]]]]\n" for i in range(1, 6))
    with pytest.raises(FixtureError, match="aliases nest values deeper than"):
        load(text)


def test_an_integer_of_more_than_4300_digits_is_named_with_its_line() -> None:
    with pytest.raises(FixtureError, match=r"f.md:3: invalid YAML in frontmatter: an integer of more than 4300 digits"):
        load("a: 1\nb: " + "9" * 5000 + "\n")


def test_a_nul_character_is_invalid_yaml() -> None:
    with pytest.raises(FixtureError, match="invalid YAML in frontmatter: unacceptable character"):
        load("x: \x00\n")


@pytest.mark.parametrize("character", ["\x01", "\x7f", "\ufffe"])
def test_a_character_yaml_refuses_is_named_on_its_own_line(character: str) -> None:
    # the text starts on the file's line 2: line 3 of the YAML is line 4 of the file
    with pytest.raises(FixtureError) as caught:
        load(f"a: 1\nb: 2\nc: 'x{character}'\n")
    assert str(caught.value) == (
        f"f.md:4: invalid YAML in frontmatter: unacceptable character {character!r}: special characters are not allowed"
    )


def test_python_tags_are_not_constructed() -> None:
    with pytest.raises(FixtureError, match="could not determine a constructor"):
        load("x: !!python/object/apply:os.system ['true']\n")
