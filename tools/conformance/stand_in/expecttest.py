"""A stand-in for the `expecttest` package (not packaged in Debian 12),
which torch.testing._internal.common_utils imports: it uses only ACCEPT
(whether to rewrite expect files) and TestCase (the base of its TestCase;
the suite's tests call none of expecttest's assertExpectedInline).
tools/conformance.sh puts this directory on PYTHONPATH for its runs only."""

import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    pass
