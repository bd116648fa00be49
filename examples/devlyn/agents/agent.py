"""A fake coding agent for the example devlyn benchmark: ``agent.py STYLE PROMPT``, run in the workspace.

``careful`` does each fixture's task and adds a test; ``hasty`` does part of it and, in F2,
swallows an error. The fixture comes from ``$ASSAY_CASE``; the prompt (spec.md or task.txt)
is printed as the start of the transcript. It never touches the network.
"""

import os
import sys
from pathlib import Path


def edit(path, old, new):
    text = Path(path).read_text()
    assert old in text, f"{path}: expected text not found"
    Path(path).write_text(text.replace(old, new, 1))
    print(f"edited {path}")


def command(name, body, test=None):
    """Add a subcommand ``name`` to cli.py whose handler is ``body``; and a test file when given."""
    edit("cli.py", "    args = parser.parse_args(argv)\n", f"{body[0]}    args = parser.parse_args(argv)\n")
    edit("cli.py", "    return 0\n", f"{body[1]}    return 0\n")
    if test:
        Path(f"tests/test_{name}.py").write_text(test)
        print(f"added tests/test_{name}.py")


def cli_test(args, expected):
    return (
        "import subprocess\nimport sys\nimport unittest\n\n\nclass CliTest(unittest.TestCase):\n"
        "    def test_output(self):\n"
        f"        done = subprocess.run([sys.executable, 'cli.py', *{args!r}], capture_output=True, text=True)\n"
        f"        self.assertEqual(done.stdout, {expected!r})\n"
    )


def loud(careful):
    edit(
        "cli.py",
        '    hello.add_argument("--name", default="world")\n',
        '    hello.add_argument("--name", default="world")\n    hello.add_argument("--loud", action="store_true")\n',
    )
    shout = 'greet(args.name).upper().rstrip("!") + "!!"' if careful else "greet(args.name).upper()"
    edit("cli.py", "        print(greet(args.name))\n", f"        print({shout} if args.loud else greet(args.name))\n")
    if careful:
        Path("tests/test_loud.py").write_text(cli_test(["hello", "--loud"], "HELLO, WORLD!!\n"))


def count(careful):
    handler = (
        "        try:\n            text = open(args.path, encoding='utf-8').read()\n"
        "        except OSError:\n            print(f'error: {args.path}', file=sys.stderr)\n            return 2\n"
        if careful
        else "        try:\n            text = open(args.path, encoding='utf-8').read()\n"
        "        except OSError:\n            pass\n"
    )
    setup = '    counter = commands.add_parser("count", help="count words")\n    counter.add_argument("path")\n'
    body = f'    if args.command == "count":\n{handler}        print(len(text.split()))\n'
    command("count", (setup, body), cli_test(["count", "words.txt"], "4\n") if careful else None)


def docstring(_careful):
    edit(
        "greet.py",
        '    return f"Hello, {name}!"\n',
        '    """The greeting for ``name``: ``Hello, NAME!``."""\n    return f"Hello, {name}!"\n',
    )


def version(careful):
    setup = '    commands.add_parser("version", help="print the version")\n'
    body = '    if args.command == "version":\n        print(open("VERSION", encoding="utf-8").read().strip())\n'
    command("version", (setup, body), cli_test(["version"], "1.4.2\n") if careful else None)


TASKS = {
    "F1-loud-flag": loud,
    "F2-count-words": count,
    "F8-known-limit-docstring": docstring,
    "F9-e2e-version": version,
}

if __name__ == "__main__":
    style, prompt = sys.argv[1], sys.argv[2]
    print(f"{style} agent, prompt:\n{prompt}")
    TASKS[os.environ["ASSAY_CASE"]](style == "careful")
