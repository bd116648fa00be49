import os
import tempfile
import unittest

from config import load


class ConfigTest(unittest.TestCase):
    def test_pairs(self):
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as handle:
            handle.write("name = bob\nloud=yes\n")
        try:
            self.assertEqual(load(handle.name), {"name": "bob", "loud": "yes"})
        finally:
            os.unlink(handle.name)
