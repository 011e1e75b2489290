"""The image tools end to end, through the real daemon: what a client sees of
source splicing, live updates, the test runner and dictionary names.

One daemon per module on a throwaway image; each test works on classes of its own.
"""

import pytest

from helpers import Daemon
from test_e2e_tools import error, open_session, ok, structured, write_image

EXTRA_FILES = {
    "fix/__init__.py": "",
    "fix/models.py": '''\
class Banner:
    def __init__(self):
        self.n = 7


class Priced:
    currency = "EUR"

    def __init__(self, cents):
        self.cents = cents

    def describe(self):
        return f"{self.cents / 100:.2f} {self.currency}"
''',
}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    root = write_image(tmp_path_factory.mktemp("imagetools") / "image")
    for rel, text in EXTRA_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture(scope="module")
def daemon(image, tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("daemon"), env={"GS_MCP_IMAGE": str(image)}) as running:
        yield running


@pytest.fixture
def c(daemon):
    client = open_session(daemon)
    yield client
    client.close()


def run(client, code):
    return structured(client, "execute_code", code=code)["result"]


# -- compile_method and string literals --------------------------------------------

def test_compile_method_keeps_multi_line_strings_as_written(daemon, image, c):
    source = 'def banner(self):\n    return """\nline\n"""'
    ok(c, "compile_method", className="Banner", source=source)
    assert run(c, "from fix.models import Banner\nBanner().banner()") == repr("\nline\n")
    assert '        return """\nline\n"""\n' in (image / "fix/models.py").read_text()
    assert structured(c, "get_method_source", className="Banner",
                      selector="banner")["source"] == source + "\n"
    ok(c, "compile_method", className="Banner",
       source='def fbanner(self):\n    return f"""\n{self.n}\n"""')
    # Carried over by a class redefinition, and seen by a new session (the committed text).
    ok(c, "compile_class_definition", source="class Banner:\n    extra = 1\n")
    other = open_session(daemon)
    assert run(other, "from fix.models import Banner\n(Banner().banner(), Banner().fbanner())"
               ) == repr(("\nline\n", "\n7\n"))
    other.close()


# -- methods and class attributes share the class namespace ------------------------

def test_compile_method_refuses_to_replace_a_class_attribute(image, c):
    before = (image / "fix/models.py").read_text()
    message = error(c, "compile_method", "refused", className="Priced",
                    source='def currency(self):\n    return "X"\n')
    assert "fix.models.Priced.currency is a class attribute, not a method (fix.models line " in message
    assert (image / "fix/models.py").read_text() == before
    assert run(c, "from fix.models import Priced\nPriced(150).describe()") == repr("1.50 EUR")


def test_deleting_a_method_that_shadowed_an_attribute_brings_the_attribute_back(daemon, c):
    ok(c, "compile_class_definition", source='class Priced:\n    currency = "EUR"\n\n'
                                             '    def currency(self):\n        return "X"\n')
    assert run(c, "from fix.models import Priced\nPriced(150).currency()") == repr("X")
    ok(c, "delete_method", className="Priced", selector="currency")
    code = "from fix.models import Priced\nPriced(150).describe()"
    assert run(c, code) == repr("1.50 EUR")
    other = open_session(daemon)
    assert run(other, code) == repr("1.50 EUR")
    other.close()
