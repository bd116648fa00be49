import subprocess
import sys
import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_default(self):
        self.assertEqual(greet(), "Hello, world!")

    def test_name(self):
        self.assertEqual(greet("bob"), "Hello, bob!")

    def test_cli(self):
        done = subprocess.run([sys.executable, "cli.py", "hello"], capture_output=True, text=True, check=True)
        self.assertEqual(done.stdout, "Hello, world!\n")
