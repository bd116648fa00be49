"""YAML with limits: a safe loader that refuses alias bombs, recursive aliases and deep nesting.

PyYAML's SafeLoader shares an aliased node instead of copying it, so a
"billion laughs" document loads at once, and then every walk over the value
(templates, CEL, the run document) explodes. Composition is recursive, so a
deeply nested document ends in RecursionError. This loader counts nesting
while it composes, then measures the node graph with aliases expanded
(memoised, so measuring is linear) before anything is built from it.
"""

from __future__ import annotations

from typing import Any

import yaml

from fixtures_core.errors import FixtureError
from fixtures_core.limits import MAX_INT_DIGITS, MAX_YAML_DEPTH, MAX_YAML_NODES


class _TooDeep(yaml.YAMLError):
    def __init__(self, mark: yaml.Mark | None) -> None:
        self.problem_mark = mark
        self.problem = f"nested deeper than {MAX_YAML_DEPTH} levels (the limit)"
        super().__init__(self.problem)


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader that stops composing past ``MAX_YAML_DEPTH`` levels, before Python's recursion limit."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _int_within_limits(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """YAML ints as SafeLoader reads them, refusing more digits than Python reads from text."""
    if len(str(node.value).replace("_", "")) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of more than {MAX_INT_DIGITS} digits", node.start_mark
        )
    return int(loader.construct_yaml_int(node))


_LimitedLoader.add_constructor("tag:yaml.org,2002:int", _int_within_limits)


def _reader_problem(exc: yaml.reader.ReaderError) -> str:
    """What character YAML refused, in one line (its own text spans several)."""
    character = exc.character if isinstance(exc.character, str) else chr(exc.character)
    return f"unacceptable character {character!r}: {exc.reason}"


def load_yaml(text: str, path: str, first_line: int, what: str) -> tuple[yaml.Node | None, object]:
    """Compose and construct one YAML document; FixtureError (file, line) for bad YAML or a limit."""
    loader: _LimitedLoader | None = None
    try:
        loader = _LimitedLoader(text)  # its reader already refuses some characters
        node = loader.get_single_node()
        if node is not None:
            _check_expanded_size(node, path, first_line, what)
        data = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses: it has a position, not a mark
        line = first_line + text[: exc.position].count("\n")
        raise FixtureError(path, line, f"invalid YAML in {what}: {_reader_problem(exc)}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + (mark.line if mark is not None else 0)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FixtureError(path, line, f"invalid YAML in {what}: {problem}") from None
    except ValueError as exc:  # a scalar Python refuses (defensive: integers are checked above)
        raise FixtureError(path, first_line, f"invalid value in {what}: {exc}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return node, data


def _check_expanded_size(root: yaml.Node, path: str, first_line: int, what: str) -> None:
    """Refuse a graph that is recursive, or larger than MAX_YAML_NODES nodes or deeper than
    MAX_YAML_DEPTH levels once its aliases are expanded."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            open_nodes.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            line = first_line + node.start_mark.line
            if size[key] > MAX_YAML_NODES:
                raise FixtureError(
                    path, line, f"{what}: aliases expand to more than {MAX_YAML_NODES:,} values (the limit)"
                )
            if depth[key] > MAX_YAML_DEPTH:
                raise FixtureError(
                    path, line, f"{what}: aliases nest values deeper than {MAX_YAML_DEPTH} levels (the limit)"
                )
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise FixtureError(path, first_line + node.start_mark.line, f"{what}: a YAML alias refers to itself")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
