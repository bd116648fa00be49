"""A fake coding agent that does part of the task and swallows an error (the "hasty" arm).

Usage: hasty.py CASE TASK, run in the workspace.
"""

from tools import add_docstring, edit, main


def loud_flag():
    # Shouts, but forgets the "!!" and adds no test.
    edit(
        "cli.py",
        '    hello.add_argument("--name", default="world")\n',
        '    hello.add_argument("--name", default="world")\n    hello.add_argument("--loud", action="store_true")\n',
    )
    edit(
        "cli.py",
        "        print(greet(args.name))\n",
        "        print(greet(args.name).upper() if args.loud else greet(args.name))\n",
    )


def config_comments():
    # Skips comments and blank lines, but hides every malformed line behind a silent catch.
    edit(
        "config.py",
        """        for line in handle:
            key, value = line.strip().split("=", 1)
            settings[key.strip()] = value.strip()
""",
        """        for line in handle:
            if line.startswith("#"):
                continue
            try:
                key, value = line.strip().split("=", 1)
            except ValueError:
                continue
            settings[key.strip()] = value.strip()
""",
    )


if __name__ == "__main__":
    main("hasty", {"loud-flag": loud_flag, "config-comments": config_comments, "docstring": add_docstring})
