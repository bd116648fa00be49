"""What both fake agents of the example suite share: editing a file and running one case."""

import sys
from pathlib import Path


def edit(path, old, new):
    """Replace the first ``old`` in ``path`` with ``new``, as an agent's edit tool would."""
    text = Path(path).read_text()
    assert old in text, f"{path}: expected text not found"
    Path(path).write_text(text.replace(old, new, 1))
    print(f"edited {path}")


def add_docstring():
    """The known-limit case: both agents document greet() the same way."""
    edit(
        "greet.py",
        '    return f"Hello, {name}!"\n',
        '    """The greeting for ``name``: ``Hello, NAME!``."""\n    return f"Hello, {name}!"\n',
    )


def main(agent, cases):
    """``AGENT.py CASE TASK``: print the task, then do the case's work in the current folder."""
    case, task = sys.argv[1], sys.argv[2]
    print(f"{agent} agent: {task}")
    cases[case]()
