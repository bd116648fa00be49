"""Properties of the fixture parser, for any text at all: rows or one FixtureError, nothing else.

Hypothesis builds fixture-shaped text (frontmatter, tables, command blocks,
YAML with aliases and nesting) and plain noise; whatever it builds, parsing
and validating either give rows or raise FixtureError naming the file.
"""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.parser import parse_document
from fixtures_core.parsing.validate import validate_matrix
from fixtures_core.spec import FixtureFile, Matrix

PATH = "prop.md"
WORDS = st.text(alphabet=string.ascii_letters + string.digits + " _-./{}$\\|`'\"", max_size=12)
YAML_SCALARS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["true", "no", "null", "~", "''", '"\\0"', '"\\ud800"', "&a x", "*a", "[*a, *a]", "{}", "[]"]),
    WORDS.map(lambda w: f'"{w}"'),
)
# Mostly keys that mean something, and now and then one that is a typo away from one.
KEYS = st.sampled_from(
    ["exec", "args", "env", "cwd", "timeout", "repeat", "metrics", "skip", "prompt", "x", "y"] * 3
    + ["repat", "os", "codeBlocks"]
)


@st.composite
def yaml_values(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.booleans()):
        return draw(YAML_SCALARS)
    items = draw(st.lists(yaml_values(depth + 1), max_size=3))
    if draw(st.booleans()):
        return "[" + ", ".join(items) + "]"
    keys = draw(st.lists(KEYS, max_size=len(items), min_size=len(items)))
    return "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items, strict=True)) + "}"


@st.composite
def frontmatters(draw: st.DrawFn) -> str:
    lines = [f"{key}: {draw(yaml_values())}" for key in draw(st.lists(KEYS, max_size=5))]
    closing = draw(st.sampled_from(["---"] * 6 + ["...", ""]))
    return "---\n" + "\n".join(lines) + f"\n{closing}\n"


@st.composite
def tables(draw: st.DrawFn) -> str:
    header = draw(
        st.lists(
            st.sampled_from(["Name", "Command", "CEL", "Repeat", "Timeout", "Args", "p", "Skip"]),
            min_size=1,
            max_size=4,
        )
    )
    cells = st.one_of(WORDS, st.sampled_from(["`true`", "`json.x > 1`", "{{ .p }}", "0", "-1", "2s", "`a \\| b`"]))
    width = st.sampled_from([len(header)] * 8 + [len(header) - 1, len(header) + 1])
    rows = draw(st.lists(width.flatmap(lambda n: st.lists(cells, min_size=n, max_size=n)), max_size=4))
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * draw(width)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


@st.composite
def blocks(draw: st.DrawFn) -> str:
    name = draw(WORDS)
    level = draw(st.sampled_from(["###"] * 8 + ["##", "####"]))
    config = (
        f"```yaml\n{draw(st.sampled_from(['repeat', 'exitCode', 'timeout', 'env', 'x']))}: {draw(yaml_values())}\n```\n"
    )
    script = draw(st.sampled_from(["```bash\ntrue\n```\n"] * 4 + ["```python\nprint(1)\n```\n", "", "```bash\n```\n"]))
    bullets = draw(
        st.lists(
            st.sampled_from(["- cel: exitCode == 0", "- contains: x", "- regex: (", "- not: contains: y", "- bogus"]),
            max_size=3,
        )
    )
    return f"{level} command: {name}\n\n{config if draw(st.booleans()) else ''}{script}\n" + "\n".join(bullets) + "\n"


fixture_texts = st.builds(
    lambda front, parts: front + "\n".join(parts),
    st.one_of(st.just(""), frontmatters()),
    st.lists(st.one_of(tables(), blocks(), WORDS), max_size=4),
)


def parses_or_names_the_file(text: str) -> None:
    try:
        rows = parse_document(text, PATH)[0]
    except FixtureError as exc:
        assert str(exc).startswith(f"{PATH}:")
        assert "\n" not in str(exc)
        return
    for error in validate_matrix(Matrix((FixtureFile(PATH, "0" * 64, rows),))):
        assert str(error).startswith(f"{PATH}:")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fixture_texts)
def test_any_fixture_shaped_text_gives_rows_or_a_fixture_error(text: str) -> None:
    parses_or_names_the_file(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_at_all_gives_rows_or_a_fixture_error(text: str) -> None:
    parses_or_names_the_file(text)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=60), st.sampled_from(["[", "{a: ", "- "]))
def test_nesting_of_any_depth_gives_rows_or_a_fixture_error(depth: int, opener: str) -> None:
    if opener == "- ":
        value = "\n" + "".join("  " * (i + 1) + "-\n" for i in range(depth))
    else:
        value = opener * depth + ("]" if opener == "[" else "}") * depth
    parses_or_names_the_file(f"---\nx: {value}\n---\n\n| Name | Command |\n|---|---|\n| a | true |\n")


VALID = """---
timeout: 30s
repeat: 2
env: {A: "{{ .p }}"}
p: &shared [1, 2]
q: *shared
metrics:
  - {name: ms, extract: json.ms, unit: ms, aggregate: median, direction: lower, threshold: {max: 5}}
---

| Name | Command | CEL | p |
|---|---|---|---|
| one | `echo '{"ms": 1}'` | `json.ms < 5` | x |
| two | `echo {{ .p }}` | `exitCode == 0` | y |

### command: block

```yaml
repeat: 1
exitCode: 0
```

```bash
echo ok
```

- cel: stdout.contains("ok")
- not: contains: nope
"""


@st.composite
def edited(draw: st.DrawFn) -> str:
    """The valid fixture above with a few random edits: near-valid input is where parsers crack."""
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 8))
        insert = draw(
            st.one_of(st.text(max_size=6), st.sampled_from(["|", "---\n", "`", "{{", "&a ", "*a", "\n", "  ", "\t"]))
        )
        text = text[:at] + insert + text[at + cut :]
    return text


def test_the_valid_fixture_is_valid() -> None:
    rows = parse_document(VALID, PATH)[0]
    assert [r.name for r in rows] == ["one", "two", "block"]
    assert validate_matrix(Matrix((FixtureFile(PATH, "0" * 64, rows),))) == []


@settings(max_examples=400, deadline=None)
@given(edited())
def test_a_valid_fixture_with_random_edits_gives_rows_or_a_fixture_error(text: str) -> None:
    parses_or_names_the_file(text)
