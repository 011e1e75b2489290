"""The testing, execution and session tools as a demanding user drives them, end to end
through the real daemon: class and module fixtures that fail, a test module that cannot
be imported, a run with more failures than an answer can carry, code reading stdin, and
what the workspace defines found through its module.

One daemon per module on a throwaway image; each test works on classes of its own.
"""

import pytest

from helpers import Daemon, open_session, tool_text
from test_e2e_tools import error, structured

FIXTURES = '''\
import unittest


class SetUpClassFails(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("setUpClass boom")

    def test_a(self):
        pass

    def test_b(self):
        pass


class TearDownClassFails(unittest.TestCase):
    @classmethod
    def tearDownClass(cls):
        raise RuntimeError("tearDownClass boom")

    def test_a(self):
        pass


class TearDownFails(unittest.TestCase):
    def tearDown(self):
        raise RuntimeError("tearDown boom")

    def test_b(self):
        self.fail("the body fails first")
'''

IMAGE = {
    "t_fixtures.py": FIXTURES,
}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    root = tmp_path_factory.mktemp("image")
    for rel, text in IMAGE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture(scope="module")
def daemon(image, tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("daemon"), env={"GS_MCP_IMAGE": str(image)}) as running:
        yield running


def run(client, code):
    return structured(client, "execute_code", code=code)["result"]


# -- execute_code ---------------------------------------------------------------------

def test_code_reading_stdin_reads_dev_null_whatever_files_it_opened(c):
    # The descriptor multiprocessing left behind for sys.stdin is reused by the next
    # files the code opens: stdin must not read them.
    run(c, "import tempfile\nwritten = tempfile.NamedTemporaryFile('w+')\n"
           "written.write('not stdin')\nwritten.flush()\n"
           "kept = [open(written.name) for _ in range(20)]")
    assert run(c, "import sys\n(sys.stdin.fileno(), sys.stdin.read())") == "(0, '')"
    assert "EOFError" in error(c, "execute_code", "other", code="input('name? ')")
