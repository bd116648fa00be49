"""A fake coding agent that does the whole task (the example suite's "careful" arm).

Usage: careful.py CASE TASK, run in the workspace. It edits files the way an
agent would and prints a short transcript; it never touches the network.
"""

from pathlib import Path

from tools import add_docstring, edit, main


def loud_flag():
    edit(
        "cli.py",
        '    hello.add_argument("--name", default="world")\n',
        '    hello.add_argument("--name", default="world")\n'
        '    hello.add_argument("--loud", action="store_true", help="shout the greeting")\n',
    )
    edit(
        "cli.py",
        "        print(greet(args.name))\n",
        '        text = greet(args.name)\n        print(text.upper().rstrip("!") + "!!" if args.loud else text)\n',
    )
    Path("tests/test_loud.py").write_text(
        "import subprocess\nimport sys\nimport unittest\n\n\n"
        "class LoudTest(unittest.TestCase):\n"
        "    def test_loud(self):\n"
        "        done = subprocess.run([sys.executable, 'cli.py', 'hello', '--loud'], capture_output=True, text=True)\n"
        "        self.assertEqual(done.stdout, 'HELLO, WORLD!!\\n')\n"
    )
    print("added tests/test_loud.py")


def config_comments():
    edit(
        "config.py",
        """        for line in handle:
            key, value = line.strip().split("=", 1)
            settings[key.strip()] = value.strip()
""",
        """        for number, line in enumerate(handle, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if "=" not in text:
                raise ValueError(f"{path}:{number}: expected KEY=VALUE, got {text!r}")
            key, value = text.split("=", 1)
            settings[key.strip()] = value.strip()
""",
    )
    Path("tests/test_comments.py").write_text(
        "import os\nimport tempfile\nimport unittest\n\nfrom config import load\n\n\n"
        "class CommentsTest(unittest.TestCase):\n"
        "    def test_comments_and_blank_lines(self):\n"
        "        with tempfile.NamedTemporaryFile('w', delete=False) as handle:\n"
        "            handle.write('# c\\n\\nname=bob\\n')\n"
        "        self.assertEqual(load(handle.name), {'name': 'bob'})\n"
        "        os.unlink(handle.name)\n"
    )
    print("added tests/test_comments.py")


if __name__ == "__main__":
    main("careful", {"loud-flag": loud_flag, "config-comments": config_comments, "docstring": add_docstring})
