"""bench-test: a tiny command line used as the starting state of the A/B example suite."""

import argparse
import sys

from greet import greet


def main(argv=None):
    parser = argparse.ArgumentParser(prog="bench-test")
    commands = parser.add_subparsers(dest="command", required=True)
    hello = commands.add_parser("hello", help="print a greeting")
    hello.add_argument("--name", default="world")
    args = parser.parse_args(argv)
    if args.command == "hello":
        print(greet(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
