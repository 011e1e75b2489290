"""The image tools end to end, through the real daemon: what a client sees of
source splicing, live updates, the test runner and dictionary names.

One daemon per module on a throwaway image; each test works on classes of its own.
Removing what other modules import: test_e2e_image_tools_removals.py (on this module's
image and daemon fixtures).
"""

import re
import sys
import time

import pytest

from helpers import Daemon, open_session, tool_text
from test_e2e_tools import call_tool, error, ok, structured, write_image
from test_e2e_tools import run_code as run
from test_tools_mutation_whole import SEALED
from test_tools_support import missing_member_error
from test_tools_support import write_image as write_files
from test_tools_testing import ODD as ODD_TESTS

# Commits' flushes to disk are no test's subject here (conftest).
pytestmark = pytest.mark.usefixtures("daemons_fsync_skipped")


EXTRA_FILES = {
    "hooked/__init__.py": "from hooked._core import Hook\n",
    "hooked/_core.py": 'class Hook:\n    __module__ = "hooked"\n\n    def run(self):\n        return 1\n',
    "hooked/sub.py": ('from hooked._core import Hook\n\n\nclass Caller(Hook):\n    __module__ = "elsewhere"\n\n'
                     '    def more(self):\n        return self.run()\n'),
    "hooked/_meta.py": 'class Meta(type):\n    __module__ = "hooked"\n\n    def hello(cls):\n        return "hi"\n',
    "hooked/widgets.py": "from hooked._meta import Meta\n\n\nclass Widget(metaclass=Meta):\n    pass\n",
    "hooked/listed.py": 'class Meta:\n    __module__ = ["hooked"]\n',
    "hooked/thing.py": "from hooked._core import Hook\n\n\nclass Thing:\n    pass\n\n\nThing = Hook()\n",
    "hooked/users.py": "from hooked.listed import Meta\n\n\nclass MetaUser(Meta):\n    pass\n",
    "late/__init__.py": "from late._core import Late\n",
    "late/_core.py": 'class Late:\n    def run(self):\n        return 1\n\n\nLate.__module__ = "late"\n',
    "dec/__init__.py": "from dec._core import Dec\n",
    "dec/_core.py": ('def public(cls):\n    cls.__module__ = "dec"\n    return cls\n\n\n'
                     '@public\nclass Dec:\n    def run(self):\n        return 1\n'),
    "hooked/base.py": "class Base:\n    pass\n",
    "hooked/deep.py": ('from hooked.base import Base\n\n\nclass Outer:\n    class Middle:\n'
                       '        __module__ = "elsewhere"\n\n        class Leaf(Base):\n            pass\n'),
    "hooked/checks.py": ('import unittest\n\n\nclass RwTest(unittest.TestCase):\n    __module__ = "elsewhere"\n\n'
                         '    def test_ok(self):\n        pass\n'),
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
    "fix/plain.py": 'class Plain:\n    kind = "plain"\n\n    def describe(self):\n        return self.kind\n',
    "fix/levels.py": "import enum\n\n\nclass Level(enum.Enum):\n    LOW = 1\n",
    "fix/hues.py": "import enum\n\n\nclass Hue(enum.Enum):\n    RED = 1\n    BLUE = 2\n",
    "fix/palette.py": "from fix.hues import Hue\n\nDEFAULT = Hue.BLUE\n",
    "fix/tones.py": "import enum\n\n\nclass Base(enum.Enum):\n    def label(self):\n        return self.name\n\n\n"
                    "class Tone(Base):\n    LOW = 1\n",
    "fix/spaced.py": '''\
# -*- coding: utf-8 -*-
class Spaced:
    """Doc."""

    x = 1

    def first(self):
        return 1

    # About middle: it goes with middle.
    @staticmethod
    def middle():
        return 2

    def last(self):
        return 3


# About Gone.
class Gone:
    pass


def tail():
    pass
''',
    "fix/decorated.py": "class Decorated:\n    @classmethod\n    def make(cls):\n        return cls()\n",
    "fix/noted.py": 'class Noted:\n    """Doc."""  # noqa: D400\n\n    x = 1\n',
    "fix/captures.py": 'class Captured:\n    match {"mode": "fast"}:\n        case {"mode": mode}:\n'
                       '            pass\n    size = (width := 3) * 2\n\n    def width(self):\n        return 1\n',
    "fix/looped.py": "import json\n\n\nclass Looped:\n    def run(self):\n        return 1\n\n"
                     "    for run in range(2):\n        pass\n\n    def codec(self):\n        return 1\n\n"
                     "    from json import dumps as codec\n",
    "fix/paired.py": "class Paired:\n    run = 5\n\n    def run(self):\n        return 1\n",
    "fix/rebound.py": "class Rebound:\n    def run(self):\n        return 9\n\n    def other(self):\n"
                      "        return 2\n",
    "fix/blocked.py": "class Blocked:\n    def run(self):\n        return 9\n",
    "fix/augmented.py": "class Keep:\n    def __radd__(self, other):\n        return other\n\n\n"
                        "class Augmented:\n    def run(self):\n        return 1\n\n    run += Keep()\n",
    "fix/deleted_run.py": "DEBUG = False\nrun = 1\n\n\nclass Deleted:\n    def run(self):\n        return 1\n\n"
                          "    if not DEBUG:\n        del run\n\n    def go(self):\n        return 2\n",
    "fix/dels.py": "class Dels:\n    def run(self):\n        return 1\n\n    def go(self):\n        return 2\n",
    "fix/global_run.py": "run = 1\n\n\nclass Declared:\n    global run\n\n    def go(self):\n        return 1\n",
    "fix/global_private.py": "class Private:\n    def __kept(self):\n        return 9\n\n    def go(self):\n"
                             "        return 2\n",
    "fix/global_def.py": "def run():\n    return 0\n\n\nclass Binding:\n    global run, __kept\n\n    def run():\n"
                         "        return 1\n\n    def go(self):\n        return 2\n",
    "fix/noted_run.py": "class NotedRun:\n    run: int\n\n    def run(self):\n        return 1\n\n"
                        "    alias = run\n",
    "fix/imported_run.py": "class ImportedRun:\n    from json import dumps as run\n\n    def run(self):\n"
                           "        return 1\n\n    alias = run\n",
    "fix/borrowed.py": "class Borrowed:\n    from json import dumps as encode\n",
    "fix/held.py": "class Held:\n    def get_x(self):\n        return 1\n\n    if (x := property(get_x)):\n"
                   "        pass\n",
    "fix/blockheld.py": "class BlockHeld:\n    def get_x(self):\n        return 1\n\n    if (flag := True):\n"
                        "        x = property(get_x)\n",
    "fix/stubs.py": 'class Commented:\n    # Filled in later.\n    pass\n\n\nclass Documented:\n'
                    '    """Doc."""\n    pass\n',
    "fix/inline.py": "class Inline(object\n             ): kind = 'inline'\n",
    "fix/licensed.py": "# Copyright ACME.\n# SPDX-License-Identifier: MIT\nclass First:\n    pass\n\n\n"
                       "class Second:\n    pass\n",
    "fix/props.py": "class Boxed:\n    @property\n    def size(self):\n        return self._size\n\n"
                    "    @size.setter\n    def size(self, value):\n        self._size = value\n",
    "fix/shapes.py": "import abc\n\n\nclass Shape(abc.ABC):\n    @abc.abstractmethod\n"
                     "    def area(self):\n        ...\n\n\nclass Circle(Shape):\n    pass\n",
    "fix/test_shapes.py": "import unittest\n\nfrom fix.shapes import Circle\n\n\n"
                          "class CircleTest(unittest.TestCase):\n    def test_area(self):\n"
                          "        self.assertEqual(Circle().area(), 3)\n",
    "fix/fields.py": "import dataclasses\nfrom typing import NamedTuple\n\n\n@dataclasses.dataclass\n"
                     "class Needs:\n    x: int\n\n\nclass Pair(NamedTuple):\n    a: int\n",
    "fix/points.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Point:\n    x: int = 0\n",
    "fix/stated.py": "import dataclasses\nfrom typing import ClassVar\n\n\n@dataclasses.dataclass\nclass Stated:\n"
                     "    registry: ClassVar[list] = []\n    x: int = 0\n\n    def norm(self):\n        return self.x\n\n\n"
                     "@dataclasses.dataclass(frozen=True)\nclass Still:\n    y: int = 0\n",
    "fix/keys.py": "class Key:\n    def __init__(self, k):\n        self.k = k\n",
    "fix/family.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Parent:\n    x: int = 0\n\n\n"
                     "@dataclasses.dataclass\nclass Child(Parent):\n    y: int = 1\n",
    "fix/frosty.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Cold:\n    x: int = 0\n\n\n"
                     "@dataclasses.dataclass\nclass Colder(Cold):\n    y: int = 1\n\n    def norm(self):\n"
                     "        return self.y\n",
    "fix/nest.py": "class Holder:\n    class Inner:\n        pass\n",
    "fix/derived.py": "class Derived:\n    def get_x(self):\n        return 1\n\n    x = property(get_x)\n",
    "fix/tabbed.py": "class Tabbed:\n\tdef first(self):\n\t\treturn 1\n",
    "gone/__init__.py": "",
    "gone/kinds.py": "class Kind:\n    pass\n\n\nclass Sort:\n    kind = Kind\n",
    "gone/test_kinds.py": "import unittest\n\nfrom gone.kinds import Sort\n\n\n"
                          "class SortTest(unittest.TestCase):\n    def test_sort(self):\n        Sort()\n",
    "gone/parts.py": "class Part:\n    pass\n",
    "gone/built.py": "class Built:\n    pass\n\n\ndef build():\n    return Built()\n\n\nBUILT = build()\n",
    "gone/cached.py": ("class Locale:\n    pass\n\n\nclass Cache:\n    def __init__(self):\n"
                       "        self.locale = Locale()\n\n\nCACHE = Cache()\n"),
    "gone/posted.py": ("from dataclasses import dataclass\n\n\nclass Zone:\n    pass\n\n\n@dataclass\n"
                       "class Clock:\n    tick: int = 0\n\n    def __post_init__(self):\n"
                       "        self.zone = Zone()\n\n\nCLOCK = Clock()\n"),
    "gone/inherited.py": ("class Mark:\n    pass\n\n\nclass Base:\n    def __init__(self):\n"
                          "        self.mark = Mark()\n\n\nclass Marked(Base):\n    pass\n\n\nMARKED = Marked()\n"),
    "gone/starred.py": "from os.path import *\n\n\nclass Star:\n    pass\n\n\nSTAR = Star()\n",
    "gone/starred_helpers.py": "from os.path import *\n\n\ndef helper():\n    return 1\n\n\nX = helper()\n",
    "gone/drawn.py": ("class Drawn:\n    def randint(self, a, b):\n        return a\n\n\n"
                      "_inst = Drawn()\nrandint = _inst.randint\n"),
    "gone/recursing.py": ("class Sized:\n    def size(self):\n        return 0\n\n"
                          "    def __getattr__(self, name):\n        return getattr(self, name)\n\n\n"
                          "SIZE = Sized().size()\n"),
    "gone/shadows.py": "class property(property):\n    pass\n\n\nclass Uses:\n    @property\n"
                       "    def size(self):\n        return 1\n",
    "gone/late/__init__.py": "from ._core import Latch\n",
    "gone/late/_core.py": 'class Latch:\n    pass\n\n\nLatch.__module__ = "gone.late"\n',
    "gone/scoped.py": "class Root:\n    pass\n\n\nclass Leaf:\n    root = Root\n\n\nxs = [Root for Root in range(3)]\n",
    "gone/test_parts.py": '''\
import unittest

from gone.parts import Part


class PartTest(unittest.TestCase):
    def test_part(self):
        self.assertTrue(Part())
''',
    "gone/base.py": "class Base:\n    pass\n",
    "gone/meta.py": "class Meta(type):\n    pass\n\n\nclass Made(metaclass=Meta):\n    pass\n\n\nclass Child(Made):\n    pass\n",
    "gone/user.py": "from gone.base import Base\n\n\nclass TestUser:\n    def test_base(self):\n        assert Base()\n",
    "gone/rooted.py": "class Meta(type):\n    pass\n\n\nclass Root(metaclass=Meta):\n    pass\n",
    "gone/branch.py": "from gone.rooted import Root\n\n\nclass Branch(Root):\n    pass\n",
    "gone/helpers.py": "def helper():\n    return 1\n\n\ndef spare():\n    return 2\n",
    "gone/helped.py": "from gone.helpers import helper\n",
    "gone/spared.py": "from gone.helpers import spare\n",
    "gone/tools.py": "def tool():\n    return 1\n",
    "gone/tooled.py": "from gone.tools import tool\n",
    "gone/shifts.py": "class Shift:\n    def clock_in(self):\n        return 1\n\n\ndef ring_bell():\n    return 2\n",
    "gone/rota.py": "import gone.shifts\n\n\ndef begin():\n    return gone.shifts.Shift().clock_in()\n\n\n"
                    "def alarm():\n    return gone.shifts.ring_bell()\n",
    "gone/quotas.py": "class Quota:\n    size = 1\n\n\nOWN = Quota.size\n",
    "gone/caps.py": "class Cap:\n    limit = 3\n",
    "gone/limits.py": "from gone.caps import Cap\n\nLIMIT = Cap.limit\n",
    "gone/tasks.py": "class Task:\n    def run(self):\n        return 1\n",
    "gone/handlers.py": "from gone.tasks import Task\n\nhandler = Task.run\n",
    # Reads the static check once missed: getattr with a literal name, a read in a
    # function the module calls as it runs, a read through a subclass inheriting it.
    "gone/fetched.py": "class Fetched:\n    def run(self):\n        return 1\n\n\nhandler = getattr(Fetched, 'run')\n",
    "gone/picks.py": "class Pick:\n    limit = 3\n",
    "gone/picked.py": "from gone.picks import Pick\n\nLIMIT = getattr(Pick, 'limit')\n",
    "gone/called.py": "class Called:\n    def run(self):\n        return 1\n\n\ndef pick():\n"
                      "    return Called.run\n\n\nhandler = pick()\n",
    "gone/sizes.py": "class Size:\n    limit = 3\n",
    "gone/sized.py": "from gone.sizes import Size\n\n\ndef limit():\n    return Size.limit\n\n\nLIMIT = limit()\n",
    "gone/duties.py": "class Duty:\n    def run(self):\n        return 1\n\n\nclass SubDuty(Duty):\n    pass\n\n\n"
                      "handler = SubDuty.run\n",
    "gone/chores.py": "class Chore:\n    limit = 3\n",
    "gone/subchores.py": "from gone.chores import Chore\n\n\nclass SubChore(Chore):\n    pass\n\n\nOWN = SubChore.limit\n",
    "gone/choreread.py": "from gone.subchores import SubChore\n\nLIMIT = SubChore.limit\n",
    "gone/records.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Record:\n    x: int\n\n\n"
                       "@dataclasses.dataclass\nclass Near(Record):\n    y: int\n",
    "gone/entries.py": "import dataclasses\n\nfrom gone.records import Record\n\n\n@dataclasses.dataclass\n"
                       "class Entry(Record):\n    y: int\n",
    "gone/chills.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Chill:\n    x: int = 0\n",
    "gone/chilled.py": "import dataclasses\n\nfrom gone.chills import Chill\n\n\n@dataclasses.dataclass\n"
                       "class Chilled(Chill):\n    y: int = 1\n",
    "gone/chillread.py": "from gone.chilled import Chilled\n",
    "gone/tallies.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Tally:\n    x: int\n\n\n"
                       "@dataclasses.dataclass\nclass SubTally(Tally):\n    def n(self):\n        return 1\n",
    "gone/fartallies.py": "import dataclasses\n\nfrom gone.tallies import SubTally\n\n\n"
                          "@dataclasses.dataclass\nclass FarTally(SubTally):\n    z: int\n",
    "gone/ledgers.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Ledger:\n    x: int\n\n\n"
                       "@dataclasses.dataclass\nclass Line(Ledger):\n    y: int\n\n    def norm(self):\n"
                       "        return self.y\n",
    "gone/forms.py": "import dataclasses\n\n\nclass Odd:\n    def __annotations__(self):\n        return 1\n\n\n"
                     "@dataclasses.dataclass\nclass Form:\n    x: int\n\n\n"
                     "@dataclasses.dataclass\nclass OddForm(Odd, Form):\n    y: int\n",
    "gone/slotted.py": "import dataclasses\n\n\n@dataclasses.dataclass(slots=True)\nclass Slotted:\n    x: int\n\n\n"
                       "@dataclasses.dataclass\nclass Unslotted(Slotted):\n    x: int\n    y: int\n",
    "gone/tiers.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Tier:\n    x: int\n\n\n"
                     "@dataclasses.dataclass\nclass SubTier(Tier):\n    def n(self):\n        return 1\n",
    "gone/fartiers.py": "import dataclasses\n\nfrom gone.tiers import SubTier\n\n\n"
                        "@dataclasses.dataclass\nclass FarTier(SubTier):\n    z: int\n",
    "gone/stages.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Stage:\n    x: int\n\n\n"
                      "@dataclasses.dataclass\nclass SubStage(Stage):\n    def n(self):\n        return 1\n",
    "gone/shelves.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Shelf:\n    x: int\n\n\n"
                       "@dataclasses.dataclass\nclass Rack(Shelf):\n    y: int\n",
    "gone/shelfread.py": "from gone.shelves import Rack\n",
    "gone/shelfuse.py": "import gone.shelfread\n",
    "gone/shelflazy.py": "def rack():\n    from gone.shelves import Rack\n    return Rack\n",
    "gone/crates.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Crate:\n    x: int\n\n\n"
                      "@dataclasses.dataclass\nclass Pallet(Crate):\n    y: int\n",
    "gone/cratequiet.py": "import contextlib\n\nwith contextlib.suppress(Exception):\n"
                          "    from gone.crates import Pallet\n",
    "gone/cratewarned.py": "import warnings\n\nwith warnings.catch_warnings():\n    from gone.crates import Pallet\n",
    "gone/crateoptional.py": "try:\n    from gone.crates import Pallet\nexcept ImportError:\n    Pallet = None\n",
    "gone/cratebranch.py": "import sys\n\nif sys.version_info >= (3, 11):\n    from gone.crates import Pallet\n"
                           "else:\n    from gone.crates import Pallet as Pallet\n",
    "gone/cratemuted.py": "from contextlib import suppress\n\nwith suppress(ImportError):\n"
                          "    from gone.crates import Pallet\n",
    "gone/bins/__init__.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Bin:\n    x: int\n\n\n"
                             "@dataclasses.dataclass\nclass Tote(Bin):\n    y: int\n",
    "gone/bins/extra.py": "X = 1\n",
    "gone/posts.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Post:\n    x: int\n",
    "gone/postlater.py": "import dataclasses\n\nfrom gone.posts import Post\n\n\n@dataclasses.dataclass\n"
                         "class Postscript(Post):\n    z: int\n",
    "gone/bares.py": "import dataclasses\n\n\nclass Bare:\n    pass\n\n\n"
                     "@dataclasses.dataclass\nclass Tagged(Bare):\n    label: str\n    n: int\n",
    "gone/bareread.py": "from gone.bares import Tagged\n",
    "gone/farbares.py": "import dataclasses\n\nfrom gone.bares import Bare\n\n\n"
                        "@dataclasses.dataclass\nclass FarTagged(Bare):\n    label: str\n    n: int\n",
    "gone/shedbares.py": "import dataclasses\n\n\nclass Shed:\n    label = 3\n\n\n"
                         "@dataclasses.dataclass\nclass ShedTagged(Shed):\n    n: int = 0\n    label: str\n",
    "gone/shedread.py": "from gone.shedbares import ShedTagged\n",
    "gone/farsheds.py": "import dataclasses\n\nfrom gone.shedbares import Shed\n\n\n"
                        "@dataclasses.dataclass\nclass FarShedTagged(Shed):\n    n: int = 0\n    label: str\n",
    "gone/boxbase.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Box:\n    x: int\n",
    "gone/boxes/__init__.py": "import dataclasses\n\nfrom gone.boxbase import Box\n\n\n"
                              "@dataclasses.dataclass\nclass Carton(Box):\n    z: int\n",
    "gone/boxes/lid.py": "X = 1\n",
    "gone/frosts.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Frost:\n    x: int = 0\n",
    "gone/frosted.py": "import dataclasses\n\nfrom gone.frosts import Frost\n\n\n@dataclasses.dataclass\n"
                       "class Frosted(Frost):\n    y: int = 1\n",
    "gone/frostuse.py": "from gone.frosts import Frost\n\nDEFAULT = Frost()\nDEFAULT.x = 2\n",
    "gone/nestcases.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Case:\n    x: int\n\n\n"
                         "class Kit:\n    @dataclasses.dataclass\n    class Slot(Case):\n        y: int\n",
    "gone/nestcaseread.py": "from gone.nestcases import Kit\n",
    "gone/nestduties.py": "class Errand:\n    def run(self):\n        return 1\n\n\nclass Crew:\n"
                          "    class Member(Errand):\n        pass\n\n\nhandler = Crew.Member.run\n",
    "gone/nestplate.py": "class Meta(type):\n    pass\n\n\nclass Plate(metaclass=Meta):\n    pass\n",
    "gone/nestrack.py": "import gone.nestplate\n\n\nclass Rack:\n    class Shelf(gone.nestplate.Plate):\n"
                        "        pass\n",
    "gone/knobs.py": "class Knob:\n    pass\n",
    "gone/knobmids.py": "import dataclasses\n\nfrom gone.knobs import Knob\n\n\n@dataclasses.dataclass\n"
                        "class KnobMid(Knob):\n    label: str\n",
    "gone/knobleaves.py": "import dataclasses\n\nfrom gone.knobmids import KnobMid\n\n\n"
                          "@dataclasses.dataclass\nclass KnobLeaf(KnobMid):\n    n: int\n",
    "gone/knobread.py": "from gone.knobleaves import KnobLeaf\n",
    "gone/ifknobs.py": "import dataclasses\n\nfrom gone.knobs import Knob\n\n\n@dataclasses.dataclass\n"
                       "class IfKnob(Knob):\n    if True:\n        label: str\n    n: int\n",
    "gone/vats.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Vat:\n    x: int\n",
    "gone/farvats.py": "import dataclasses\n\nfrom gone.vats import Vat\n\n\n@dataclasses.dataclass\n"
                       "class FarVat(Vat):\n    y: int\n",
    # Re-imported last, it collects the garbage: the FarVat classes made before, the old included.
    "gone/vatsweep.py": "import gc\n\ntry:\n    from gone.farvats import FarVat\nexcept TypeError:\n"
                        "    FarVat = None\ngc.collect()\n",
    "gone/nestfar.py": "import dataclasses\n\nfrom gone.nestcases import Case\n\n\nclass Rig:\n"
                       "    class Frame:\n        @dataclasses.dataclass\n        class Arm(Case):\n"
                       "            z: int\n",
    "generic/__init__.py": "",
    "generic/box.py": "import typing\n\nT = typing.TypeVar('T')\n\n\nclass Box(typing.Generic[T]):\n    pass\n\n\n"
                      "class IntBox(Box[int]):\n    pass\n\n\nraise ImportError('not yet')\n",
    "generic/users.py": "from generic.box import Box\n\n\nclass StrBox(Box[str]):\n    pass\n\n\n"
                        "class Unsized(Box):\n    pass\n",
    "fix/test_odd.py": ODD_TESTS,
    "fix/test_moved.py": "import unittest\n\n\nclass MovedTest(unittest.TestCase):\n"
                         "    def helper(self):\n        return 1\n\n"
                         "    def test_fails(self):\n        self.assertEqual(self.helper(), 2)\n",
    # A page break (form feed) above: Python's lines, not str.splitlines's.
    "fix/test_paged.py": "import unittest\n\x0c\nclass PagedTest(unittest.TestCase):\n"
                         "    def helper(self):\n        return 1\n"
                         "    def test_fails(self):\n        self.assertEqual(self.helper(), 2)\n",
    "fix/deep.py": "class Deep:\n    def one(self):\n        return 1\n\n\nf = " + "lambda: " * 1500 + "1\n",
    "fix/boxed.py": "import functools\n\n\ndef deco(f):\n    @functools.wraps(f)\n    def wrapper(*args):\n"
                    "        return f(*args)\n    return wrapper\n\n\nclass Shifted:\n    def pad(self):\n"
                    "        return 0\n\n    @property\n    def size(self):\n        return self._size\n\n"
                    "    @size.setter\n    def size(self, value):\n        self._size = value\n\n"
                    "    @deco\n    def a(self):\n        return 1\n\n    @deco\n    def b(self):\n"
                    "        return 2\n",
    "fix/declared.py": "class Pad:\n    def pad(self):\n        return 0\n\n\n"
                       "def install():\n    global handler\n\n    def handler():\n        return 1 // 0\n\n\n"
                       "install()\n",
    "fix/comprehended.py": "class Pad:\n    def pad(self):\n        return 0\n\n\n"
                           "pick = [lambda: 1 // 0 for _ in '_'][0]\n",
    "fix/stacked.py": "import dataclasses\n\n\nclass Pad:\n    def pad(self):\n        return 0\n\n\n"
                      "@dataclasses.dataclass\nclass Below:\n    size: int = 0\n\n    class Inner:\n"
                      "        pass\n",
    "fix/registry.py": "class Pad:\n    def pad(self):\n        return 0\n\n\n"
                       "HANDLERS = {'fail': lambda: 1 // 0}\n\n\n"
                       "def run(check=lambda: HANDLERS['fail']()):\n    return check()\n",
    "fix/test_kinds.py": '''\
import unittest


class TestPlain:
    def helper(self):
        return 1

    def test_helped(self):
        assert self.helper() == 1


class KindsTest(unittest.TestCase):
    def test_pass(self):
        pass

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise KeyError("k")

    @unittest.skip("not now")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_expected(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected(self):
        pass

    def test_subtests(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertEqual(i, [0, 0, None][i] if i < 2 else i // 0)
''',
}
if sys.version_info >= (3, 12):   # a `type` statement (PEP 695) does not compile before
    EXTRA_FILES["fix/aliased.py"] = "class Pad:\n    def pad(self):\n        return 0\n\n\ntype Broken = list[Undefined]\n"


# Files in other encodings than UTF-8: one declared, one not decodable at all.
ENCODED_FILES = {
    "latin.py": b'# -*- coding: latin-1 -*-\nclass Latin:\n    def f(self):\n        return "caf\xe9"\n',
    "undecodable.py": b'class Undecodable:\n    def f(self):\n        return "caf\xe9"\n',
    "fix/crlf.py": b"class Windows:\r\n    @property\r\n    def size(self):\r\n        return self._size\r\n\r\n"
                   b"    @size.setter\r\n    def size(self, value):\r\n        self._size = value\r\n\r\n"
                   b"    def banner(self):\r\n        return '''a\r\nb'''\r\n",
}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    root = write_files(write_image(tmp_path_factory.mktemp("imagetools") / "image"), EXTRA_FILES)
    for rel, data in ENCODED_FILES.items():
        (root / rel).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def daemon(image, tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("daemon"), env={"GS_MCP_IMAGE": str(image)}) as running:
        yield running


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


def test_a_definition_sent_again_with_a_comment_below_it_writes_it_once(daemon, image, c):
    # Each send wrote the comment again below the copies already there: compile_method
    # and compile_class_definition, declared idempotent, were not.
    ok(c, "compile_class_definition", dictionaryName="fix.models", source="class Trailed:\n    pass\n")
    source = "def total(self):\n    return 2\n# the total's end\n"
    ok(c, "compile_method", className="fix.models.Trailed", source=source)
    written = (image / "fix/models.py").read_text()
    assert "        return 2\n    # the total's end\n" in written
    again = structured(c, "compile_method", className="fix.models.Trailed", source=source)
    assert again["committed"] == [] and (image / "fix/models.py").read_text() == written, again
    # so does compile_class_definition, a class statement sent with one below it
    source = "class Shelved:\n    slots = 3\n# the shelf's end\n"
    ok(c, "compile_class_definition", dictionaryName="fix.models", source=source)
    written = (image / "fix/models.py").read_text()
    again = structured(c, "compile_class_definition", dictionaryName="fix.models", source=source)
    assert again["committed"] == [] and (image / "fix/models.py").read_text() == written, again


def test_comments_sent_below_a_class_or_a_new_method_stay_where_they_were_sent(daemon, image, c):
    # A class statement's, at its margin, went above the members carried over, inside the
    # class; a new method's drifted below the method added next.
    ok(c, "compile_class_definition", dictionaryName="fix.models",
       source="class Ended:\n    def kept(self):\n        return 1\n")
    ok(c, "compile_class_definition", source="class Ended:\n    size = 2\n# Ended ends here\n")
    ok(c, "compile_method", className="fix.models.Ended", source="def more(self):\n    return 3\n# more's end\n")
    ok(c, "compile_method", className="fix.models.Ended", source="def last(self):\n    return 4\n")
    written = (image / "fix/models.py").read_text()
    assert ("class Ended:\n    size = 2\n\n    def kept(self):\n        return 1\n\n"
            "    def more(self):\n        return 3\n    # more's end\n\n"
            "    def last(self):\n        return 4\n# Ended ends here\n") in written, written


# -- a commit the disk refuses -------------------------------------------------------

def test_a_commit_that_cannot_be_written_says_nothing_was_written_and_keeps_the_change(image, c):
    # The worker's temp file name taken by a directory: writing it fails (EISDIR), as a
    # full disk or an unwritable image directory would.
    blocker = image / "fix" / (".models.py.tmp-%d" % structured(c, "status")["pid"])
    before = (image / "fix/models.py").read_text()
    blocker.mkdir()
    try:
        message = error(c, "compile_method", "other", className="Banner",
                        source="def shown(self):\n    return self.n\n")
    finally:
        blocker.rmdir()
    assert message.startswith("commit failed: the image could not be written ([Errno 21] Is a directory: "
                              f"'fix/{blocker.name}')")   # where in the image, not the bare name
    assert "nothing was written and your changes are kept uncommitted (fix.models)" in message
    assert (image / "fix/models.py").read_text() == before
    assert structured(c, "commit")["committed"] == ["fix.models"]
    assert "def shown(self)" in (image / "fix/models.py").read_text()


def test_a_commit_that_cannot_be_written_leaves_no_directory_it_made(image, c):
    # A new package's directories are made first ("aaa" sorts before "fix"), then the
    # blocked temp file fails the commit: nothing of it may stay, directories included.
    blocker = image / "fix" / (".models.py.tmp-%d" % structured(c, "status")["pid"])
    blocker.mkdir()
    try:
        error(c, "compile_method", "other", className="Banner", source="def gone(self):\n    return 1\n")
        message = error(c, "add_dictionary", "other", dictionaryName="aaa.made")
    finally:
        blocker.rmdir()
    assert "nothing was written and your changes are kept uncommitted" in message
    assert not (image / "aaa").exists()
    assert sorted(structured(c, "commit")["committed"]) == ["aaa", "aaa.made", "fix.models"]
    assert (image / "aaa" / "made.py").exists()


def test_a_dictionary_name_too_long_for_a_file_is_refused_and_the_session_still_commits(image, c):
    # Added anyway, the module could never be written: the tool's own commit, and every
    # later mutation's, would fail with "File name too long" until an abort.
    message = error(c, "add_dictionary", "invalidParams", dictionaryName="a" * 250)
    assert "too long" in message and "choose a shorter name" in message
    assert structured(c, "status")["uncommittedChanges"] is False
    ok(c, "set_class_comment", className="Banner", comment="Still commits.")
    assert not list(image.glob("a" * 250 + "*"))


def test_an_enum_redefined_with_a_new_member_is_replaced_and_has_it(image, c):
    # An Enum's metaclass refuses reassigning a member: no in-place copy, which failed
    # half done ("cannot reassign member 'LOW'").
    result = structured(c, "compile_class_definition", source="class Level(enum.Enum):\n    LOW = 1\n    HIGH = 2\n")
    assert result["outcome"] == "replaced"
    assert run(c, "from fix.levels import Level\n[m.name for m in Level]") == repr(["LOW", "HIGH"])
    assert "    HIGH = 2\n" in (image / "fix/levels.py").read_text()


def test_an_enum_redefined_without_a_member_an_importer_reads_names_that_importer(daemon, c):
    # fix.palette (`DEFAULT = Hue.BLUE`) failed its re-import here and the answer said nothing.
    result = structured(c, "compile_class_definition", source="class Hue(enum.Enum):\n    RED = 1\n")
    said = missing_member_error("Hue", "BLUE")
    assert (result["outcome"], result["importErrors"]) == ("replaced", {"fix.palette": said})
    other = open_session(daemon)
    assert said in error(other, "execute_code", "other", code="import fix.palette")
    other.close()


def test_an_enum_made_anew_is_taken_again_by_what_its_module_made_from_it_below(daemon, image, c):
    # The module's own dataclass default and constant kept the old enum's members: the
    # session's Part().is_round() was False, a new session's True.
    (image / "fix" / "parts.py").write_text(
        "import enum\nfrom dataclasses import dataclass\n\n\nclass Shape(enum.Enum):\n    ROUND = 1\n\n\n"
        "@dataclass\nclass Part:\n    shape: Shape = Shape.ROUND\n\n    def is_round(self):\n"
        "        return self.shape is Shape.ROUND\n\n\nDEFAULT = Shape.ROUND\n")
    ok(c, "refresh")
    check = "import fix.parts as s\n(s.Part().is_round(), s.DEFAULT is s.Shape.ROUND)"
    assert run(c, check) == "(True, True)"
    result = structured(c, "compile_class_definition", dictionaryName="fix.parts",
                        source="class Shape(enum.Enum):\n    ROUND = 1\n    SQUARE = 2\n")
    assert result["outcome"] == "replaced" and result["reimported"] == ["fix.parts"], result
    assert run(c, check) == "(True, True)"
    other = open_session(daemon)
    assert run(other, check) == "(True, True)"
    other.close()


def test_a_class_whose_metaclass_getattr_raises_is_edited_whole(daemon, image, c):
    # The metaclass's KeyError for __abstractmethods__ failed compile_method half done: the
    # live class had the method, the source not, and describe_class failed on its __doc__.
    (image / "fix" / "metaregistry.py").write_text(
        "class Meta(type):\n    _registry = {}\n\n    def __getattr__(cls, name):\n"
        "        return cls._registry[name]\n\n    @property\n    def __doc__(cls):\n"
        "        raise RuntimeError('no doc here')\n\n\nclass Registered(metaclass=Meta):\n"
        "    \"\"\"Its own doc.\"\"\"\n\n    def run(self):\n        return 1\n")
    ok(c, "refresh")
    ok(c, "compile_method", className="fix.metaregistry.Registered", source="def other(self):\n    return 2\n")
    other = open_session(daemon)
    assert run(other, "from fix.metaregistry import Registered\nRegistered().other()") == "2"
    assert structured(other, "describe_class", className="fix.metaregistry.Registered")["doc"] == "Its own doc."
    other.close()


def test_an_edit_failing_part_way_leaves_the_live_class_and_its_source_as_they_were(daemon, image, c):
    # Its metaclass raised on the edit's second set (the ABC's __abstractmethods__, after the
    # method): the live class ran the new def, get_method_source gave the old one.
    (image / "fix" / "sealed.py").write_text(SEALED)
    ok(c, "refresh")
    message = error(c, "compile_method", "other", className="fix.sealed.Job",
                    source="def run(self):\n    return 'new'\n")
    assert run(c, "from fix.sealed import Job\nJob().run()") == repr("old")
    assert "nothing was changed" in message
    assert structured(c, "get_method_source", className="fix.sealed.Job",
                      selector="run")["source"] == 'def run(self):\n    return "old"\n'
    assert structured(c, "commit")["committed"] == []
    assert (image / "fix" / "sealed.py").read_text() == SEALED
    other = open_session(daemon)
    assert run(other, "from fix.sealed import Job\nJob().run()") == repr("old")
    other.close()


def test_a_memberless_enum_base_is_redefined_in_place_under_its_subclass(c):
    result = structured(c, "compile_class_definition", dictionaryName="fix.tones",
                        source="class Base(enum.Enum):\n    def label(self):\n        return self.name.lower()\n")
    assert result["outcome"] == "updated"
    assert run(c, "from fix.tones import Tone\nTone.LOW.label()") == repr("low")


def test_a_comment_with_a_nul_byte_is_escaped_and_the_module_still_compiles(daemon, image, c):
    # Written raw, the NUL left fix/plain.py a text Python refuses: every class in it gone.
    ok(c, "set_class_comment", className="Plain", comment="before\x00after")
    assert "    'before\\x00after'\n" in (image / "fix/plain.py").read_text()
    other = open_session(daemon)
    assert run(other, "from fix.plain import Plain\nPlain.__doc__") == repr("before\x00after")
    other.close()


# -- methods and class attributes share the class namespace ------------------------

def test_compile_method_refuses_to_replace_a_class_attribute(image, c):
    before = (image / "fix/models.py").read_text()
    message = error(c, "compile_method", "refused", className="Priced",
                    source='def currency(self):\n    return "X"\n')
    assert "fix.models.Priced.currency is a class attribute, not a method (fix.models line " in message
    assert (image / "fix/models.py").read_text() == before
    assert run(c, "from fix.models import Priced\nPriced(150).describe()") == repr("1.50 EUR")


def test_compile_method_refuses_a_def_named_like_an_annotated_field(image, c):
    # The def became the field's default: Needs() built with x a function, Pair(a=...) optional.
    before = (image / "fix/fields.py").read_text()
    for class_name, field in (("Needs", "x"), ("Pair", "a")):
        message = error(c, "compile_method", "refused", className=class_name,
                        source=f"def {field}(self):\n    return 1\n")
        assert (f"fix.fields.{class_name}.{field} is declared an attribute by the class body's "
                f"annotation '{field}: int' (fix.fields line ") in message
    assert (image / "fix/fields.py").read_text() == before
    assert run(c, "from fix.fields import Needs, Pair\ntry:\n    Needs()\nexcept TypeError as e:\n"
                  "    err = str(e)\nerr, Pair._field_defaults") == \
        repr(("Needs.__init__() missing 1 required positional argument: 'x'", {}))


def test_compile_method_refuses_a_member_name_a_namedtuples_class_statement_refuses(image, c):
    # Compiled live, committed, and then a new session's import of fix.fields failed.
    before = (image / "fix/fields.py").read_text()
    message = error(c, "compile_method", "compileError", className="Pair",
                    source="def _asdict(self):\n    return {}\n")
    assert message == ("fix.fields.Pair's class statement, run with this def as an import of fix.fields "
                       "runs it, raised AttributeError: Cannot overwrite NamedTuple attribute _asdict; "
                       "nothing was changed")
    assert (image / "fix/fields.py").read_text() == before
    assert run(c, "from fix.fields import Pair\nPair(1)._asdict()") == "{'a': 1}"


def test_a_class_side_method_that_takes_no_class_is_refused_and_the_module_left_alone(image, c):
    before = (image / "fix/models.py").read_text()
    message = error(c, "compile_method", "refused", className="Priced", meta=True,
                    source="def default():\n    return Priced(0)\n")
    assert "meta makes default a classmethod" in message and "def default(cls, ...)" in message
    assert (image / "fix/models.py").read_text() == before
    ok(c, "compile_method", className="Priced", meta=True, source="def default(cls):\n    return cls(0)\n")
    assert run(c, "from fix.models import Priced\nPriced.default().describe()") == repr("0.00 EUR")


def test_a_name_a_walrus_or_a_match_capture_binds_is_a_class_attribute_to_the_method_tools(
        daemon, image, c):
    # Neither was counted: compile_method let a def replace `mode`, and delete_method took
    # `width` from the live class, which a new session has from the `:=`.
    path = image / "fix/captures.py"
    before = path.read_text()
    message = error(c, "compile_method", "refused", className="fix.captures.Captured",
                    source="def mode(self):\n    return 1\n")
    assert "fix.captures.Captured.mode is a class attribute, not a method (fix.captures line 2)" in message
    assert path.read_text() == before
    ok(c, "delete_method", className="fix.captures.Captured", selector="width")
    assert path.read_text() == before[:before.index("\n\n    def width")] + "\n"
    code = "from fix.captures import Captured\n(Captured.mode, Captured.width, Captured.size)"
    assert run(c, code) == repr(("fast", 3, 6))
    other = open_session(daemon)
    assert run(other, code) == repr(("fast", 3, 6))
    other.close()


def test_a_name_a_class_level_loop_or_import_binds_is_a_class_attribute_to_the_method_tools(
        daemon, image, c):
    # Neither was counted: compile_method set the def on the live class, while a new session
    # has what the loop or the import binds below it.
    path = image / "fix/looped.py"
    before = path.read_text()
    for name, line in (("run", 8), ("codec", 14)):
        message = error(c, "compile_method", "refused", className="fix.looped.Looped",
                        source=f"def {name}(self):\n    return 3\n")
        assert f"fix.looped.Looped.{name} is a class attribute, not a method (fix.looped line {line})" in message
    assert path.read_text() == before
    code = "from fix.looped import Looped\nimport json\n(Looped.run, Looped.codec is json.dumps)"
    assert run(c, code) == repr((1, True))
    other = open_session(daemon)
    assert run(other, code) == repr((1, True))
    other.close()


def test_deleting_a_method_a_class_level_loop_binds_again_notes_no_read_of_it(daemon, image):
    # The module fails to import, so its source alone tells what still binds `run`: the
    # loop's target was not counted, and the read below was noted as failing.
    path = image / "relooped.py"
    path.write_text("class Relooped:\n    def run(self):\n        return 1\n\n    for run in range(2):\n"
                    "        pass\n\n\nOWN = Relooped.run\nFAILS = 1 / 0\n")
    try:
        client = open_session(daemon)   # a new session's view has the file
        result = ok(client, "delete_method", className="relooped.Relooped", selector="run")
        assert "readAsItRuns" not in result["structuredContent"] and "note" not in tool_text(result)
        assert "def run" not in path.read_text()
        client.close()
    finally:
        path.unlink()


def test_compile_method_refuses_a_def_of_a_name_the_class_body_declares_global(daemon, image, c):
    # The def went into the class and onto the live class; a new session's import bound it
    # as the module's run instead, and the class had no run.
    path = image / "fix/global_run.py"
    before = path.read_text()
    message = error(c, "compile_method", "refused", className="fix.global_run.Declared",
                    source="def run(self):\n    return 3\n")
    assert ("the class body of fix.global_run.Declared declares run global (fix.global_run line 5), so a def "
            "of that name there binds the module's run, not a method of the class") in message
    assert path.read_text() == before
    code = "import fix.global_run\n(fix.global_run.run, hasattr(fix.global_run.Declared, 'run'))"
    assert run(c, code) == repr((1, False))
    other = open_session(daemon)
    assert run(other, code) == repr((1, False))
    other.close()


def test_a_def_of_a_name_the_class_body_declares_global_is_no_method_of_the_class(daemon, image, c):
    # `def run` below `global run` binds the module's run: get_method_source showed it as the
    # class's method and delete_method took it out of the module; and `global __kept`, which
    # declares the module's `_Binding__kept` as Python mangles it, let a def of that name in.
    path = image / "fix/global_def.py"
    before = path.read_text()
    assert run(c, "import fix.global_def as m\n(hasattr(m.Binding, 'run'), m.run())") == repr((False, 1))
    for tool in ("get_method_source", "delete_method"):
        assert "its class body declares run global, line 6" in error(
            c, tool, "notFound", className="fix.global_def.Binding", selector="run")
    methods = structured(c, "list_methods", className="fix.global_def.Binding")["methods"]
    assert [method["name"] for group in methods.values() for method in group] == ["go"]
    assert "declares _Binding__kept global (fix.global_def line 6)" in error(
        c, "compile_method", "refused", className="fix.global_def.Binding",
        source="def _Binding__kept(self):\n    return 3\n")
    assert path.read_text() == before
    other = open_session(daemon)
    assert run(other, "import fix.global_def as m\n(hasattr(m.Binding, '_Binding__kept'), m.run())") == repr(
        (False, 1))
    other.close()


def test_a_private_def_a_redefinition_declares_global_mangled_is_not_carried(daemon, image, c):
    # `global _Private__kept` declares what `def __kept` binds: the def was carried below it,
    # and a new session's import bound the module's `_Private__kept`.
    result = structured(c, "compile_class_definition", source="class Private:\n    global _Private__kept\n",
                        dictionaryName="fix.global_private")
    assert result["carried"] == ["go"]
    assert "return 9" not in (image / "fix/global_private.py").read_text()
    code = "import fix.global_private as m\n(hasattr(m, '_Private__kept'), m.Private().go())"
    other = open_session(daemon)
    assert run(other, code) == repr((False, 2))
    other.close()


def test_a_name_a_class_level_block_binds_counts_for_a_class_that_cannot_be_loaded(daemon, image):
    # Its source alone tells what binds `run`, and only the body's own statements were asked:
    # the hint said nothing of the block, and deleting the def noted the read below as failing.
    path = image / "reblocked.py"
    path.write_text("class Reblocked:\n    if True:\n        run = 5\n\n    def run(self):\n        return 1\n\n"
                    "    if True:\n        mode = 2\n\n\nOWN = Reblocked.run\nFAILS = 1 / 0\n")
    try:
        client = open_session(daemon)   # a new session's view has the file
        said = ("reblocked.Reblocked defines no method mode (it binds mode by a class-level statement, "
                "'mode = 2' at line 9, written inside the class-level if statement at line 8: the class "
                "has it when that branch runs; get_class_definition shows it)")
        assert error(client, "get_method_source", "notFound", className="reblocked.Reblocked",
                     selector="mode") == said
        result = ok(client, "delete_method", className="reblocked.Reblocked", selector="run")
        assert "readAsItRuns" not in result["structuredContent"] and "note" not in tool_text(result)
        assert "def run" not in path.read_text()
        client.close()
    finally:
        path.unlink()


def test_delete_method_refuses_a_method_an_augmented_assignment_reads(daemon, image, c):
    # `run += Keep()` was taken for binding run only: the refusal was a compileError saying
    # to bind run at the module's top level (with no live class, the def went).
    path = image / "fix/augmented.py"
    before = path.read_text()
    message = error(c, "delete_method", "refused", className="fix.augmented.Augmented", selector="run")
    assert message.startswith("fix.augmented.Augmented.run is used by the class body as it runs "
                              "('run += Keep()'); deleted, the class could not be made")
    assert path.read_text() == before
    other = open_session(daemon)
    assert run(other, "from fix.augmented import Augmented\nAugmented().run()") == "1"
    other.close()


def test_delete_method_refuses_a_method_the_class_body_deletes(daemon, image, c):
    # `del run` in the class body deletes from the class's namespace alone (the module's
    # run does not count): deleted, the def left it a NameError, and no check saw it.
    path = image / "fix/deleted_run.py"
    before = path.read_text()
    message = error(c, "delete_method", "refused", className="fix.deleted_run.Deleted", selector="run")
    assert message.startswith("fix.deleted_run.Deleted.run is used by the class body as it runs "
                              "('if not DEBUG:"), message
    assert "fix.deleted_run would no longer import" in message
    assert path.read_text() == before
    other = open_session(daemon)
    assert run(other, "from fix.deleted_run import Deleted\nDeleted().go(), hasattr(Deleted, 'run')") == "(2, False)"
    other.close()


def test_a_class_redefined_with_a_del_of_a_carried_method_keeps_the_method_above_it(daemon, image, c):
    # The carried `def run` went last, below the new text's `del run`: a compileError
    # telling to bind run at the module's top level (which `del` ignores).
    result = structured(c, "compile_class_definition", source="class Dels:\n    del run\n    x = 1\n",
                        dictionaryName="fix.dels")
    assert result["carried"] == ["run", "go"], result
    written = (image / "fix/dels.py").read_text()
    assert written.index("def run") < written.index("del run") < written.index("def go")
    other = open_session(daemon)
    assert run(other, "from fix.dels import Dels\n(Dels().go(), Dels.x, hasattr(Dels, 'run'))") == "(2, 1, False)"
    other.close()


def test_a_definition_sent_back_keeps_a_method_beside_an_assignment_of_its_name(daemon, image, c):
    # `run = 5` counted as the text binding run itself: the def was dropped, run became 5.
    path = image / "fix/paired.py"
    before = path.read_text()
    definition = structured(c, "get_class_definition", className="fix.paired.Paired")["definition"]
    assert definition == "class Paired:\n    run = 5\n"
    ok(c, "compile_class_definition", source=definition, dictionaryName="fix.paired")
    assert path.read_text() == before
    code = "from fix.paired import Paired\nPaired().run()"
    assert run(c, code) == "1"
    other = open_session(daemon)
    assert run(other, code) == "1"
    other.close()


def test_a_class_statement_binding_a_name_by_a_loop_or_import_carries_no_def_of_it(daemon, image, c):
    # Only defs, nested classes and assignments counted: the old def was carried over below
    # the loop, and the class had it instead of the loop's target.
    result = structured(c, "compile_class_definition", dictionaryName="fix.rebound",
                        source="class Rebound:\n    for run in range(2):\n        pass\n\n"
                               "    from json import dumps as other\n")
    assert result["carried"] == []
    assert "return 9" not in (image / "fix/rebound.py").read_text()
    code = "from fix.rebound import Rebound\nimport json\n(Rebound.run, Rebound.other is json.dumps)"
    assert run(c, code) == repr((1, True))
    other = open_session(daemon)
    assert run(other, code) == repr((1, True))
    other.close()


def test_a_class_statement_binding_a_name_in_a_class_level_block_carries_no_def_of_it(daemon, image, c):
    # Only the body's own statements counted: the old def was carried over below the `if`,
    # and the class had it instead of the 5 the statement sent binds.
    result = structured(c, "compile_class_definition", dictionaryName="fix.blocked",
                        source="class Blocked:\n    if True:\n        run = 5\n")
    assert result["carried"] == []
    assert "return 9" not in (image / "fix/blocked.py").read_text()
    code = "from fix.blocked import Blocked\nBlocked.run"
    assert run(c, code) == "5"
    other = open_session(daemon)
    assert run(other, code) == "5"
    other.close()


def test_delete_method_tells_an_annotation_alone_from_an_import_binding_the_name_it_deletes(
        daemon, image, c):
    # `run: int` counted as binding run above `alias = run`, an import did not: the first
    # deletion went through (every new session's import then failed, NameError), the
    # second was refused.
    path = image / "fix/noted_run.py"
    before = path.read_text()
    message = error(c, "delete_method", "refused", className="fix.noted_run.NotedRun", selector="run")
    assert "fix.noted_run.NotedRun.run is used by the class body as it runs ('alias = run')" in message
    assert path.read_text() == before
    ok(c, "delete_method", className="fix.imported_run.ImportedRun", selector="run")
    assert "def run" not in (image / "fix/imported_run.py").read_text()
    code = "from fix.imported_run import ImportedRun\nimport json\nImportedRun.run is json.dumps"
    assert run(c, code) == "True"
    other = open_session(daemon)
    assert run(other, code + " is ImportedRun.alias") == "True"
    other.close()


def test_a_name_a_class_level_import_binds_is_said_to_be_bound_by_that_statement(c):
    # Not counted as a class-level binding: "a decorator or code run on the class set it".
    said = error(c, "get_method_source", "notFound", className="fix.borrowed.Borrowed", selector="encode")
    assert ("(it binds encode by a class-level statement, 'from json import dumps as encode' at line 2; "
            "get_class_definition shows it)") in said


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



def test_delete_method_and_delete_class_leave_the_source_as_if_never_written(daemon, image, c):
    path = image / "fix/spaced.py"
    original = path.read_text()
    for _ in range(2):   # an add and delete cycle gives back the same text
        ok(c, "compile_method", className="fix.spaced.Spaced", source="def extra(self):\n    return 4\n")
        ok(c, "delete_method", className="fix.spaced.Spaced", selector="extra")
        assert path.read_text() == original
    ok(c, "delete_method", className="fix.spaced.Spaced", selector="middle")
    ok(c, "delete_method", className="fix.spaced.Spaced", selector="first")
    ok(c, "delete_class", className="fix.spaced.Gone")
    expected = ('# -*- coding: utf-8 -*-\nclass Spaced:\n    """Doc."""\n\n    x = 1\n\n'
                '    def last(self):\n        return 3\n\n\ndef tail():\n    pass\n')
    assert path.read_text() == expected
    ok(c, "delete_method", className="fix.spaced.Spaced", selector="last")
    assert path.read_text() == ('# -*- coding: utf-8 -*-\nclass Spaced:\n    """Doc."""\n\n'
                                '    x = 1\n\n\ndef tail():\n    pass\n')
    assert "defines no method last" in error(c, "delete_method", "notFound",
                                        className="fix.spaced.Spaced", selector="last")
    other = open_session(daemon)   # the committed text imports in a new session
    assert run(other, "from fix.spaced import Spaced\nSpaced.x") == "1"
    other.close()

def test_a_method_added_then_deleted_leaves_a_pass_with_a_comment_or_docstring_as_written(
        daemon, image, c):
    # The `pass` was filled: the comment above it went with the deleted method, and the
    # docstring class came back without its `pass`.
    path = image / "fix/stubs.py"
    original = path.read_text()
    for name, kept in (("Commented", "    # Filled in later.\n    pass\n"),
                       ("Documented", '    """Doc."""\n    pass\n')):
        ok(c, "compile_method", className=f"fix.stubs.{name}", source="def extra(self):\n    return 4\n")
        assert f"class {name}:\n{kept}\n    def extra(self):\n        return 4\n" in path.read_text()
        assert run(c, f"from fix.stubs import {name}\n{name}().extra()") == "4"
        ok(c, "delete_method", className=f"fix.stubs.{name}", selector="extra")
        assert path.read_text() == original
        assert run(c, f"from fix.stubs import {name}\nhasattr({name}, 'extra')") == "False"
    other = open_session(daemon)
    assert run(other, "from fix.stubs import Documented\nDocumented.__doc__") == repr("Doc.")
    other.close()


# -- splices the randomized edits found wrong (test_image_splice_properties.py) -----

def test_set_class_comment_on_a_class_opening_with_a_decorated_method_commits_a_module_that_imports(
        daemon, image, c):
    # The docstring went in between @classmethod and its def: the committed module no
    # longer compiled, and every class in it was gone for every session.
    ok(c, "set_class_comment", className="fix.decorated.Decorated", comment="Made by make.")
    assert (image / "fix/decorated.py").read_bytes() == (
        b'class Decorated:\n    """Made by make."""\n    @classmethod\n    def make(cls):\n'
        b'        return cls()\n')
    other = open_session(daemon)
    assert run(other, "from fix.decorated import Decorated\n(Decorated.__doc__, "
                      "type(Decorated.make()).__name__)") == repr(("Made by make.", "Decorated"))
    other.close()


def test_set_class_comment_removing_a_docstring_keeps_the_comment_written_after_it(daemon, image, c):
    # The `# noqa: D400` after the closing quotes went with the docstring.
    ok(c, "set_class_comment", className="fix.noted.Noted", comment="")
    assert (image / "fix/noted.py").read_text() == "class Noted:\n    # noqa: D400\n\n    x = 1\n"
    code = "from fix.noted import Noted\n(Noted.__doc__, Noted.x)"
    assert run(c, code) == repr((None, 1))
    other = open_session(daemon)
    assert run(other, code) == repr((None, 1))
    other.close()


def test_a_crlf_class_redefined_keeps_its_property_and_methods_byte_for_byte(daemon, image, c):
    # The carried methods came out with "\r\r\n" (a blank line more after each line, a
    # string's value changed), and the property's setter replaced its getter.
    result = structured(c, "compile_class_definition",
                        source="class Windows:\r\n    kind = 'crlf'\r\n")
    assert result["carried"] == ["size", "banner"] and result["failed"] == []
    assert (image / "fix/crlf.py").read_bytes() == (
        b"class Windows:\r\n    kind = 'crlf'\r\n\r\n    @property\r\n    def size(self):\r\n"
        b"        return self._size\r\n\r\n    @size.setter\r\n    def size(self, value):\r\n"
        b"        self._size = value\r\n\r\n    def banner(self):\r\n        return '''a\r\nb'''\r\n")
    other = open_session(daemon)
    assert run(other, "from fix.crlf import Windows\nw = Windows()\nw.size = 3\n"
                      "(w.size, w.banner(), w.kind)") == repr((3, "a\nb", "crlf"))
    other.close()


def test_a_class_whose_body_shares_its_headers_last_line_is_refused_and_left_alone(image, c):
    # The method went in at the body line's indentation: a module that did not compile.
    before = (image / "fix/inline.py").read_bytes()
    message = error(c, "compile_method", "refused", className="fix.inline.Inline",
                    source="def m(self):\n    return 1\n")
    assert "written on one line with its header" in message
    error(c, "set_class_comment", "refused", className="fix.inline.Inline", comment="Doc.")
    assert (image / "fix/inline.py").read_bytes() == before
    assert structured(c, "status")["changedModules"] == []


def test_a_one_line_class_statement_is_refused_for_the_members_it_cannot_carry(image, c):
    before = (image / "fix/models.py").read_bytes()
    message = error(c, "compile_class_definition", "refused", source="class Priced(object): pass")
    assert "the class statement writes its body on its header's line" in message
    assert "cannot be carried over (__init__, describe" in message and "recompileMethods false" in message
    assert (image / "fix/models.py").read_bytes() == before
    assert structured(c, "status")["changedModules"] == []


def test_describe_class_answers_for_a_class_whose_doc_and_annotations_are_defs(c):
    # Kind other before: the worker could not send a function as the doc ("not JSON"), and
    # inspect.get_annotations raised ValueError for a function as __annotations__.
    ok(c, "compile_class_definition", dictionaryName="fix.plain", source='class Odd:\n    """Doc."""\n')
    for member in ("__doc__", "__annotations__"):
        ok(c, "compile_method", className="fix.plain.Odd", source=f"def {member}(self):\n    return 1\n")
        described = structured(c, "describe_class", className="fix.plain.Odd")
        assert member in described["methods"] and described["doc"] is None


def test_delete_class_of_the_first_class_keeps_the_licence_that_opens_the_file(daemon, image, c):
    # The comment lines right above the class went with it: here the file's licence header.
    ok(c, "delete_class", className="fix.licensed.First")
    assert (image / "fix/licensed.py").read_bytes() == (
        b"# Copyright ACME.\n# SPDX-License-Identifier: MIT\nclass Second:\n    pass\n")
    assert "fix.licensed defines no class First" in error(c, "delete_class", "notFound",
                                                          className="fix.licensed.First")
    other = open_session(daemon)   # the committed module imports in a new session
    assert run(other, "import fix.licensed as m\n(hasattr(m, 'First'), m.Second.__name__)") == repr(
        (False, "Second"))
    other.close()


def test_a_propertys_getter_edited_from_get_method_source_keeps_its_setter(daemon, image, c):
    # compile_method took one def only, so the getter went alone and replaced the setter.
    shown = structured(c, "get_method_source", className="fix.props.Boxed", selector="size")["source"]
    ok(c, "compile_method", className="fix.props.Boxed", source=shown.replace("return self._size",
                                                                              "return self._size * 2"))
    assert (image / "fix/props.py").read_bytes() == (
        b"class Boxed:\n    @property\n    def size(self):\n        return self._size * 2\n\n"
        b"    @size.setter\n    def size(self, value):\n        self._size = value\n")
    assert "the defs of one property" in error(c, "compile_method", "refused", className="fix.props.Boxed",
                                               source="def a(self):\n    pass\n\ndef b(self):\n    pass\n")
    before = (image / "fix/props.py").read_bytes()
    assert "is written as 2 defs" in error(c, "compile_method", "refused", className="fix.props.Boxed",
                                           source="@property\ndef size(self):\n    return 0\n")
    assert (image / "fix/props.py").read_bytes() == before
    other = open_session(daemon)
    assert run(other, "from fix.props import Boxed\nb = Boxed()\nb.size = 2\nb.size") == "4"
    other.close()


# -- abort undoes what code did to live objects, not only source changes ---------------

def test_abort_undoes_what_execute_code_did_to_image_classes_and_modules(c):
    patch = "import fix.plain as m\nm.Plain.kind = 'patched'\nm.EXTRA = 1\nm.Plain().describe()"
    assert run(c, patch) == repr("patched")
    aborted = structured(c, "abort")
    assert aborted["discarded"] == [] and "fix.plain" in aborted["reloaded"]
    look = "import fix.plain as m\n(m.Plain().describe(), hasattr(m, 'EXTRA'))"
    assert run(c, look) == repr(("plain", False))


def test_abort_imports_through_the_view_again_what_code_imported_around_it(image, c):
    # The image module imported from its file, and then the view's import hook taken out:
    # the session took its own image modules for kernel ones, refused to change them (saying
    # "kernel module"), and read them from the disk, not its view, and abort undid neither.
    from_file = ("import importlib.util, sys\n"
                 f"spec = importlib.util.spec_from_file_location('fix.plain', {str(image / 'fix/plain.py')!r})\n"
                 "m = importlib.util.module_from_spec(spec)\nsys.modules['fix.plain'] = m\n"
                 "spec.loader.exec_module(m)")
    run(c, from_file)
    method = "def describe(self):\n    return 'described ' + self.kind\n"
    refused = error(c, "compile_method", "refused", className="fix.plain.Plain", source=method)
    assert "fix.plain was imported from its file by code run in this session" in refused
    assert "abort imports it from the view again" in refused
    assert "fix.plain" in structured(c, "abort")["reloaded"]
    ok(c, "compile_method", className="fix.plain.Plain", source=method)
    assert run(c, "import fix.plain\nfix.plain.Plain().describe()") == repr("described plain")

    unhooked = ("import sys\nsys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != '_SnapshotLoader']\n"
                f"sys.path.insert(0, {str(image)!r})\n"
                "[sys.modules.pop(name) for name in list(sys.modules) if name.startswith('fix')]")
    run(c, unhooked)
    look = "import fix.plain\n(type(fix.plain.__spec__.loader).__name__, fix.plain.Plain().describe())"
    assert run(c, look) == repr(("SourceFileLoader", "described plain"))
    structured(c, "abort")
    assert run(c, look) == repr(("_SnapshotLoader", "described plain"))
    ok(c, "compile_method", className="fix.plain.Plain", source='def describe(self):\n    return self.kind\n')


# -- only test methods run as tests --------------------------------------------------

@pytest.mark.parametrize("selector", ["setUp", "tearDown", "__init__", "__class__", "run",
                                      "countTestCases", "assertEqual"])
@pytest.mark.parametrize("tool", ["run_test_method", "describe_test_failure"])
def test_a_callable_that_is_not_a_test_method_is_not_run(c, tool, selector):
    message = error(c, tool, "notFound", className="CartTest", selector=selector)
    assert message.startswith(f"CartTest has no test method {selector} (its test methods: ")
    assert "test_empty_cart_totals_zero" in message


def test_a_pytest_style_helper_is_not_a_test_method(c):
    assert error(c, "run_test_method", "notFound", className="TestPlain", selector="helper") == (
        "TestPlain has no test method helper (its test methods: test_helped)")
    assert structured(c, "run_test_method", className="TestPlain", selector="test_helped")["passed"] == 1


# -- abstract base classes ---------------------------------------------------------

def test_implementing_an_abstract_method_makes_the_class_instantiable_here_as_in_a_new_session(daemon, c):
    # Python reckons an ABC's abstract methods as the class is made: the test kept failing
    # with "Can't instantiate abstract class Circle" after area() was compiled.
    # Python 3.12 on quotes the method's name: "... abstract method 'area'"
    assert re.search("abstract method '?area'?", structured(c, "run_test_class",
                                                         className="CircleTest")["failed"][0]["message"])
    ok(c, "compile_method", className="fix.shapes.Circle", source="def area(self):\n    return 3")
    assert structured(c, "run_test_class", className="CircleTest")["passed"] == 1
    ok(c, "compile_method", className="fix.shapes.Shape", source="@abc.abstractmethod\ndef size(self):\n    ...")
    other = open_session(daemon)
    for session in (c, other):
        assert re.search("abstract method '?size'?", structured(session, "run_test_class",
                                                             className="CircleTest")["failed"][0]["message"])
    other.close()


def test_a_dataclass_given_post_init_runs_it_here_as_in_a_new_session(daemon, c):
    # The __init__ dataclass made never called a __post_init__ compiled after it.
    assert run(c, "from fix.points import Point\nPoint(-2)") == "Point(x=-2)"
    ok(c, "compile_method", className="fix.points.Point", source="def __post_init__(self):\n    self.x = abs(self.x)")
    other = open_session(daemon)
    for session in (c, other):
        assert run(session, "from fix.points import Point\nPoint(-2)") == "Point(x=2)"
    other.close()
    ok(c, "delete_method", className="fix.points.Point", selector="__post_init__")
    assert run(c, "Point(-2)") == "Point(x=-2)"


def test_a_dataclass_made_again_keeps_its_class_state_and_stays_frozen(c):
    # The registry was emptied by compiling norm; the frozen class's assignment (to a
    # name that is no field) raised TypeError: super(type, obj): obj must be an instance...
    run(c, "from fix.stated import Stated, Still\nStated.registry.append('state')")
    ok(c, "compile_method", className="fix.stated.Stated", source="def norm(self):\n    return -self.x")
    assert run(c, "Stated.registry, Stated(2).norm()") == "(['state'], -2)"
    ok(c, "compile_method", className="fix.stated.Still", source="def double(self):\n    return 2 * self.y")
    assert run(c, "Still(2).double()") == "4"
    assert "FrozenInstanceError: cannot assign to field 'z'" in error(c, "execute_code", "other",
                                                                       code="Still(2).z = 3")


def test_a_class_given_eq_is_unhashable_here_as_in_a_new_session(daemon, c):
    ok(c, "compile_method", className="fix.keys.Key", source="def __eq__(self, other):\n    return self.k == other.k")
    other = open_session(daemon)
    for session in (c, other):
        assert "unhashable type: 'Key'" in error(session, "execute_code", "other",
                                                 code="from fix.keys import Key\n{Key(1)}")
    other.close()


# -- dictionary names that could never be imported -----------------------------------

@pytest.mark.parametrize("name, says", [
    ("__init__", "__init__ is a dunder name"), ("__main__", "__main__ is a dunder name"),
    ("fresh.__init__", "__init__ is a dunder name"), ("class", "class is a Python keyword"),
    ("fresh.import", "import is a Python keyword"), ("a..b", "not a dotted module name")])
def test_add_dictionary_refuses_names_that_cannot_be_imported(image, c, name, says):
    assert says in error(c, "add_dictionary", "invalidParams", dictionaryName=name)
    assert not (image / "__init__.py").exists() and not (image / "fresh").exists()
    assert not list(image.glob("class.py"))
    assert "" not in structured(c, "list_dictionaries")["dictionaries"]


def test_a_dictionary_named_by_underscores_alone_is_made(image, c):
    # `___` was refused as "a dunder name", which it is not: it names a module like any other.
    ok(c, "add_dictionary", dictionaryName="___")
    assert (image / "___.py").exists() and "___" in structured(c, "list_dictionaries")["dictionaries"]
    ok(c, "remove_dictionary", dictionaryName="___")
    assert not (image / "___.py").exists()


def test_an_init_file_at_the_image_root_names_no_dictionary(image, daemon):
    # One written before the tools refused the name (or by hand): not the dictionary ""
    (image / "__init__.py").write_text("")
    try:
        client = open_session(daemon)
        listed = structured(client, "list_dictionaries")["dictionaries"]
        client.close()
        assert "" not in listed and "shop" in listed
    finally:
        (image / "__init__.py").unlink()


def test_a_dictionary_name_is_read_as_an_import_statement_reads_it(image, c):
    # `import ｗide.ｍod` imports wide.mod (NFKC); add_dictionary made ｗide/ｍod.py, which
    # no import statement could reach, and listed it as a dictionary of its own.
    ok(c, "add_dictionary", dictionaryName="ｗide.ｍod")
    assert (image / "wide/mod.py").exists() and not list(image.glob("ｗide*"))
    ok(c, "compile_class_definition", source="class Wide:\n    pass\n", dictionaryName="ｗide.mod")
    assert run(c, "import ｗide.ｍod\nｗide.ｍod.Wide.__module__") == "'wide.mod'"
    assert structured(c, "list_classes", dictionaryName="wide.ｍod")["classes"] == ["Wide"]
    assert [n for n in structured(c, "list_dictionaries")["dictionaries"] if "ide" in n] == [
        "wide", "wide.mod"]
    ok(c, "remove_dictionary", dictionaryName="ｗide")
    assert not (image / "wide").exists()


def test_a_module_file_no_import_statement_reaches_is_no_dictionary(image, daemon):
    (image / "ｆolded.py").write_text("class Folded:\n    pass\n")
    try:
        client = open_session(daemon)
        listed = structured(client, "list_dictionaries")["dictionaries"]
        client.close()
        assert "ｆolded" not in listed and "folded" not in listed and "shop" in listed
    finally:
        (image / "ｆolded.py").unlink()


def test_a_dot_nfkc_makes_of_another_character_separates_no_dictionary_name(image, c):
    # NFKC reads U+FE52 and U+2024 as `.`: add_dictionary made fix/odd.py of fix﹒odd, and
    # remove_dictionary would have removed fix.plain, named as no import statement names it.
    assert "not a dotted module name" in error(c, "add_dictionary", "invalidParams", dictionaryName="fix\ufe52odd")
    assert "not a dotted module name" in error(c, "remove_dictionary", "invalidParams",
                                               dictionaryName="fix\u2024plain")
    assert not (image / "fix/odd.py").exists() and (image / "fix/plain.py").exists()


def test_remove_dictionary_refuses_a_dunder_name(c):
    assert "__init__ is a dunder name" in error(c, "remove_dictionary", "invalidParams",
                                                dictionaryName="__init__")


def test_remove_dictionary_removes_a_packages_program_without_running_it(image, daemon, tmp_path):
    # Refused as a dunder name: no tool could remove a package's __main__.py.
    ran = tmp_path / "ran.txt"
    (image / "prog").mkdir()
    (image / "prog/__init__.py").write_text("")
    (image / "prog/__main__.py").write_text(f"open({str(ran)!r}, 'a').write('ran')\nraise SystemExit(2)\n")
    try:
        client = open_session(daemon)
        ok(client, "remove_dictionary", dictionaryName="prog.__main__")
        listed = structured(client, "list_dictionaries")["dictionaries"]
        client.close()
        assert "prog.__main__" not in listed and "prog" in listed
        assert not (image / "prog/__main__.py").exists() and not ran.exists()
    finally:
        for rel in ("prog/__main__.py", "prog/__init__.py"):
            (image / rel).unlink(missing_ok=True)
        (image / "prog").rmdir()


def test_a_packages_init_file_is_no_dictionary_and_nothing_is_written_to_it(image, c):
    before = (image / "fix/__init__.py").read_bytes()
    message = error(c, "compile_class_definition", "notFound", dictionaryName="fix.__init__",
                    source="class Pen:\n    pass\n")
    assert "fix/__init__.py is the package fix's own module: pass fix" in message
    assert "pass fix" in error(c, "list_classes", "notFound", dictionaryName="fix.__init__")
    assert (image / "fix/__init__.py").read_bytes() == before
    assert "fix.__init__" not in run(c, "import sys\nsorted(sys.modules)")


# -- source files in other encodings ----------------------------------------------

def test_a_latin_1_module_is_browsed_and_committed_in_its_own_encoding(daemon, image, c):
    assert 'return "café"' in structured(c, "get_method_source", className="Latin", selector="f")["source"]
    ok(c, "compile_method", className="Latin", source="def g(self):\n    return 'thé'\n")
    assert "return 'thé'".encode("latin-1") in (image / "latin.py").read_bytes()
    other = open_session(daemon)
    assert run(other, "import latin\nlatin.Latin().f() + latin.Latin().g()") == repr("caféthé")
    other.close()



@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "Latin", "source": "def euro(self):\n    return '€'\n"}),
    ("set_class_comment", {"className": "Latin", "comment": "costs 5 €"}),
])
def test_a_character_a_latin_1_module_cannot_carry_is_refused_before_anything_changes(
        image, c, tool, arguments):
    before = (image / "latin.py").read_bytes()
    message = error(c, tool, "invalidParams", **arguments)
    assert message.startswith("latin.py declares the encoding iso-8859-1, which cannot carry '€'")
    assert "nothing was changed" in message
    assert (image / "latin.py").read_bytes() == before
    assert structured(c, "status")["uncommittedChanges"] is False
    assert run(c, "import latin\n(hasattr(latin.Latin, 'euro'), latin.Latin.__doc__)") == "(False, None)"
    # No abort needed: the session's next edit commits.
    ok(c, "compile_method", className="Latin", source="def euro(self):\n    return '\\u20ac'\n")
    assert run(c, "import latin\nlatin.Latin().euro()") == repr("€")
    ok(c, "delete_method", className="Latin", selector="euro")
    assert (image / "latin.py").read_bytes() == before

def test_a_module_that_does_not_decode_leaves_the_image_wide_tools_working(c):
    assert "shop.models.Product" in structured(c, "list_all_classes")["classes"]
    assert "shop.models.Product.describe" in tool_text(ok(c, "find_senders", selector="price"))
    assert "shop.test_models.CartTest" in structured(c, "list_test_classes")["testClasses"]
    listed = ok(c, "list_classes", dictionaryName="undecodable")
    assert listed["structuredContent"]["notListed"] == [
        reason for reason in structured(c, "list_all_classes")["notListed"] if " undecodable " in reason]
    assert tool_text(listed).startswith("(not listed: image module undecodable does not compile: line ")
    message = error(c, "compile_class_definition", "other", source="class New:\n    pass\n",
                    dictionaryName="undecodable")
    assert message.startswith("image module undecodable does not compile: line ")


# -- line numbers after an edit -----------------------------------------------------

def test_a_test_an_edit_moved_fails_at_its_own_line_as_in_a_new_session(daemon, c):
    # helper made two lines longer moves test_fails down: the session that made the edit
    # must quote test_fails's own line, not the one now where it used to be.
    ok(c, "compile_method", className="MovedTest",
       source="def helper(self):\n    one = 1\n    two = one + one\n    return one\n")
    here = structured(c, "describe_test_failure", className="MovedTest", selector="test_fails")
    fresh = structured(open_session(daemon), "describe_test_failure", className="MovedTest",
                       selector="test_fails")
    assert 'line 11, in test_fails\n    self.assertEqual(self.helper(), 2)\n' in fresh["traceback"]
    assert here["traceback"] == fresh["traceback"]
    assert run(c, "import inspect, fix.test_moved as t\n"
                  "inspect.getsource(t.MovedTest.test_fails).splitlines()[0]") == "'    def test_fails(self):'"


def test_a_setter_and_a_decorated_method_an_edit_moved_show_their_own_source_as_in_a_new_session(daemon, c):
    # The setter, moved onto its getter's old line, was left there (getsource gave the
    # getter); b, below the deleted a, kept its line (a's `@deco` was taken for its own).
    ok(c, "compile_method", className="Shifted",
       source="def pad(self):\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    return 0\n")
    ok(c, "delete_method", className="Shifted", selector="a")
    check = ("import inspect\nfrom fix.boxed import Shifted\n"
             "(inspect.getsource(Shifted.size.fset).split(chr(10))[0], Shifted.size.fset.__code__.co_firstlineno, "
             "inspect.getsource(Shifted.b).split(chr(10))[:2], Shifted.b.__wrapped__.__code__.co_firstlineno)")
    fresh = open_session(daemon)
    assert run(c, check) == run(fresh, check) == repr(("    @size.setter", 23, ["    @deco", "    def b(self):"], 27))
    fresh.close()


def test_an_edit_above_lambdas_nested_1500_deep_answers_ok(daemon, c):
    # Renumbering them met the recursion limit after the method was compiled and committed:
    # the tool answered an error for an edit that had landed. (So did find_references_to,
    # in this module's symbol table: test_the_search_tools_say_plainly_when_nothing_matched
    # reads it too.)
    ok(c, "compile_method", className="Deep", source="def one(self):\n    one = 1\n    return one\n")
    check = "import fix.deep\n(fix.deep.Deep().one(), fix.deep.f.__code__.co_firstlineno)"
    fresh = open_session(daemon)
    assert run(c, check) == run(fresh, check) == "(1, 7)"
    fresh.close()


def test_a_def_a_function_declares_global_raises_at_its_own_line_after_an_edit_moved_it(daemon, c):
    # Named `install.<locals>.handler` where Python names it `handler`, it was never moved:
    # the traceback quoted the line where it used to be.
    ok(c, "compile_method", className="fix.declared.Pad", source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    fresh = open_session(daemon)
    for session in (c, fresh):
        text = error(session, "execute_code", "other", code="import fix.declared\nfix.declared.handler()")
        assert "line 12, in handler\n    return 1 // 0\n" in text, text
    fresh.close()


def test_a_lambda_made_in_a_comprehension_raises_at_its_own_line_after_an_edit_moved_it(daemon, c):
    # Python 3.12 names it `<lambda>` (the comprehension inlined, PEP 709); taken for
    # `<listcomp>.<lambda>`, it paired with no def and kept its old lines there.
    ok(c, "compile_method", className="fix.comprehended.Pad",
       source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    fresh = open_session(daemon)
    for session in (c, fresh):
        text = error(session, "execute_code", "other", code="import fix.comprehended\nfix.comprehended.pick()")
        assert "line 8, in <lambda>\n    pick = [lambda: 1 // 0 for _ in '_'][0]\n" in text, text
    fresh.close()


def test_a_registrys_handler_and_a_default_raise_at_their_own_lines_after_an_edit_moved_them(daemon, c):
    # Only the functions the module's namespace and classes held were moved: these kept
    # their old lines, and the traceback quoted the lines above them.
    ok(c, "compile_method", className="fix.registry.Pad",
       source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    fresh = open_session(daemon)
    for session in (c, fresh):
        text = error(session, "execute_code", "other", code="import fix.registry\nfix.registry.run()")
        assert "line 11, in <lambda>\n    def run(check=lambda: HANDLERS['fail']()):\n" in text, text
        assert "line 8, in <lambda>\n    HANDLERS = {'fail': lambda: 1 // 0}\n" in text, text
    fresh.close()


def test_classes_an_edit_moved_show_their_own_source_as_in_a_new_session(daemon, c):
    # Python 3.13's inspect.getsource reads a class's __firstlineno__, which kept its old
    # line: the session that made the edit was shown the two lines above the class.
    ok(c, "compile_method", className="fix.stacked.Pad",
       source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    check = ("import inspect\nfrom fix.stacked import Below\n"
             "(inspect.getsource(Below).split(chr(10))[:2], inspect.getsource(Below.Inner).split(chr(10))[0])")
    fresh = open_session(daemon)
    assert run(c, check) == run(fresh, check) == repr((["@dataclasses.dataclass", "class Below:"], "    class Inner:"))
    fresh.close()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="`type` statements are Python 3.12's (PEP 695)")
def test_a_type_alias_an_edit_moved_raises_at_its_own_line_as_in_a_new_session(daemon, c):
    # Its value's code is named as the alias: it paired with no def and kept its old line.
    ok(c, "compile_method", className="fix.aliased.Pad", source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    fresh = open_session(daemon)
    for session in (c, fresh):
        text = error(session, "execute_code", "other", code="import fix.aliased\nfix.aliased.Broken.__value__")
        assert "line 8, in Broken\n    type Broken = list[Undefined]\n" in text, text
    fresh.close()


def test_tracebacks_below_a_page_break_quote_the_line_that_raised(daemon, c):
    # The lines kept for tracebacks were str.splitlines's, which ends one at a form feed:
    # every line below one was quoted from the line above it: in an image module, in the
    # session whose edit moved the test as in a new one, and in execute_code's own code.
    ok(c, "compile_method", className="PagedTest",
       source="def helper(self):\n    one = 1\n    two = one + one\n    return one\n")
    fresh = open_session(daemon)
    for session in (c, fresh):
        failure = structured(session, "describe_test_failure", className="PagedTest", selector="test_fails")
        assert "in test_fails\n    self.assertEqual(self.helper(), 2)\n" in failure["traceback"], failure
    fresh.close()
    text = error(c, "execute_code", "other", code="x = 0\n\x0c\n1/x")
    assert "line 3, in <module>\n    1/x\n" in text, text


# -- test outcomes add up ------------------------------------------------------------

def test_run_test_class_counts_each_test_once_and_names_every_outcome(c):
    ran = structured(c, "run_test_class", className="KindsTest")
    counts = {key: ran[key] for key in ("run", "passed", "failures", "errors", "skipped",
                                        "expectedFailures", "unexpectedSuccesses")}
    assert counts == {"run": 7, "passed": 1, "failures": 1, "errors": 2, "skipped": 1,
                      "expectedFailures": 1, "unexpectedSuccesses": 1}
    assert sum(counts.values()) == 2 * counts["run"]
    text = tool_text(ok(c, "run_test_class", className="KindsTest"))
    assert text.splitlines()[0] == ("fix.test_kinds.KindsTest: 7 run, 1 passed, 1 failed, 2 errors, "
                                    "1 skipped, 1 expected failures, 1 unexpected successes")
    # The failing subtests are each listed, under the one test they belong to.
    listed = sorted((f["test"], f["outcome"]) for f in ran["failed"])
    assert listed == [("fix.test_kinds.KindsTest.test_error", "error"),
                      ("fix.test_kinds.KindsTest.test_fail", "failure"),
                      ("fix.test_kinds.KindsTest.test_subtests (i=1)", "failure"),
                      ("fix.test_kinds.KindsTest.test_subtests (i=2)", "error"),
                      ("fix.test_kinds.KindsTest.test_unexpected", "unexpectedSuccess")]


def test_a_huge_or_unencodable_failure_message_leaves_the_run_answered(c):
    ran = structured(c, "run_test_class", className="OddTest")
    assert (ran["run"], ran["passed"], ran["errors"]) == (3, 1, 2)
    messages = {entry["test"]: entry["message"] for entry in ran["failed"]}
    assert messages["fix.test_odd.OddTest.test_surrogate"] == "\\ud800"
    assert messages["fix.test_odd.OddTest.test_huge"].endswith(
        "[... 69,990,000 more characters of the message cut: a test's report keeps the first 10,000]\n")
    assert "ValueError: \\ud800" in tool_text(ok(c, "describe_test_failure", className="OddTest",
                                                  selector="test_surrogate"))


def test_describe_test_failure_says_what_an_unexpected_success_is(c):
    detail = ok(c, "describe_test_failure", className="KindsTest", selector="test_unexpected")
    assert tool_text(detail) == ("fix.test_kinds.KindsTest.test_unexpected: unexpectedSuccess\n"
                                 "message: the test passed, but it is marked @expectedFailure")
    assert "exception" not in detail["structuredContent"]


def test_describe_test_failure_says_why_a_skipped_test_was_skipped(c):
    detail = ok(c, "describe_test_failure", className="KindsTest", selector="test_skip")
    assert tool_text(detail) == ("fix.test_kinds.KindsTest.test_skip: skipped (no failure)\n"
                                 "message: not now")
    assert detail["structuredContent"]["message"] == "not now"


# -- search: empty arguments and empty answers -------------------------------------

@pytest.mark.parametrize("tool, key", [("find_implementors", "selector"), ("find_senders", "selector"),
                                       ("find_references_to", "name"), ("search_method_source", "pattern")])
def test_the_search_tools_refuse_an_empty_argument_alike(c, tool, key):
    # The schema says minLength 1, so the closed-schema check refuses it, naming tool and argument.
    assert error(c, tool, "invalidParams", **{key: ""}) == f"{tool}: argument {key!r} must not be empty"


@pytest.mark.parametrize("tool, arguments, answer", [
    ("find_implementors", {"selector": "nobody_has"}, "no implementors of nobody_has"),
    ("find_senders", {"selector": "nobody_calls"}, "no senders of nobody_calls"),
    ("find_references_to", {"name": "Nobody"}, "no references to Nobody"),
    ("search_method_source", {"pattern": "zzqq"}, "no methods containing 'zzqq'")])
def test_the_search_tools_say_plainly_when_nothing_matched(c, tool, arguments, answer):
    # ...and that undecodable.py, which does not compile, was not searched.
    first, *rest = tool_text(ok(c, tool, **arguments)).splitlines()
    assert first == answer and rest == [
        "(not searched: image module undecodable does not compile: line 3: byte b'\\xe9' is not "
        "valid in the file's encoding (UTF-8 unless a coding declaration says otherwise))"]


def test_describe_class_lists_methods_not_the_instance_attribute_descriptors(c):
    described = structured(c, "describe_class", className="Product")
    assert described["methods"] == ["__init__", "describe", "price"]
    assert "methods: __init__, describe, price" in tool_text(ok(c, "describe_class", className="Product"))


# -- a module whose import raises what is not an Exception ------------------------------

def test_a_module_raising_keyboard_interrupt_at_import_is_its_import_error_only(daemon, image):
    (image / "interrupted.py").write_text("class Stopper:\n    pass\n\nraise KeyboardInterrupt('at import')\n")
    try:
        client = open_session(daemon)   # a new session's view has the file
        # the image-wide tools import every module: they answer, the module's error aside
        assert "shop.test_models.CartTest" in structured(client, "list_test_classes")["testClasses"]
        assert "interrupted.Stopper" in structured(client, "list_all_classes")["classes"]
        said = error(client, "run_test_class", "other", className="interrupted.Stopper")
        assert "image module interrupted failed to import: KeyboardInterrupt: at import" in said
        client.close()
    finally:
        (image / "interrupted.py").unlink()


def test_a_method_goes_into_a_tab_indented_module_with_tabs_and_it_still_imports(daemon, image, c):
    # Sent with spaces, its lines were written "\t    ...": two styles in one file.
    ok(c, "compile_method", className="Tabbed", source="def second(self):\n    if self:\n        return 2\n")
    ok(c, "compile_method", className="Tabbed", source="\tdef third(self):\n\t\treturn 3\n")
    ok(c, "compile_class_definition", dictionaryName="fix.tabbed", source="class Made:\n  y = 4\n")
    assert (image / "fix/tabbed.py").read_text() == (
        "class Tabbed:\n\tdef first(self):\n\t\treturn 1\n\n\tdef second(self):\n\t\tif self:\n"
        "\t\t\treturn 2\n\n\tdef third(self):\n\t\treturn 3\n\n\nclass Made:\n\ty = 4\n")
    check = "from fix.tabbed import Made, Tabbed\n(Tabbed().second(), Tabbed().third(), Made.y)"
    assert run(c, check) == repr((2, 3, 4))
    ok(c, "abort")                       # the session now reads the file as committed
    assert run(c, check) == repr((2, 3, 4))


def test_a_dataclass_base_given_a_field_names_its_subclasses_left_with_the_old_fields(c):
    # Child is not made again with Parent: its __init__ and __repr__ lack the new field,
    # and the answer said nothing of it.
    result = ok(c, "compile_class_definition",
                source="@dataclasses.dataclass\nclass Parent:\n    x: int = 0\n    w: int = 5\n")
    assert result["structuredContent"]["staleSubclasses"] == ["fix.family.Child"]
    assert ("note: the dataclass subclasses fix.family.Child were made from what fix.family.Parent "
            "was before this change (other fields)") in tool_text(result)
    check = "from fix.family import Child\nrepr(Child())"
    assert run(c, check) == repr("Child(x=0, y=1)")
    ok(c, "abort")
    assert run(c, check) == repr("Child(x=0, w=5, y=1)")


def test_a_dataclass_base_made_frozen_or_not_names_the_subclass_python_would_now_refuse(c, image):
    # The answer said to make Colder again as it stands (Python refuses it), compile_method
    # on Colder was accepted with no word while every new import of fix.frosty failed, and
    # Cold made unfrozen again kept its frozen __setattr__ in the session.
    result = ok(c, "compile_class_definition",
                source="@dataclasses.dataclass(frozen=True)\nclass Cold:\n    x: int = 0\n")
    assert result["structuredContent"]["frozenConflicts"] == {
        "fix.frosty.Colder": "cannot inherit non-frozen dataclass from a frozen one"}
    assert ("a new session's import of fix.frosty fails until compile_class_definition makes it "
            "frozen=True as well") in tool_text(result)
    message = error(c, "compile_method", "refused", className="fix.frosty.Colder",
                    source="def m(self):\n    return 1")
    assert message.startswith("fix.frosty.Colder cannot be made again as written")
    assert "def m(self)" not in (image / "fix" / "frosty.py").read_text()
    ok(c, "compile_class_definition",
       source="@dataclasses.dataclass(frozen=True)\nclass Colder(Cold):\n    y: int = 1\n")
    assert "frozenConflicts" not in structured(c, "compile_method", className="fix.frosty.Colder",
                                               source="def m(self):\n    return 2")
    namespace = {}
    exec((image / "fix" / "frosty.py").read_text(), namespace)    # as a new session imports it
    assert namespace["Colder"]().m() == 2
    result = ok(c, "compile_class_definition", source="@dataclasses.dataclass\nclass Cold:\n    x: int = 0\n")
    assert result["structuredContent"]["frozenConflicts"] == {
        "fix.frosty.Colder": "cannot inherit frozen dataclass from a non-frozen one"}
    assert run(c, "from fix.frosty import Cold\ncold = Cold()\ncold.x = 5\ncold.x") == "5"


SLEET = ("import dataclasses\n\n\n@dataclasses.dataclass(frozen=True)\nclass Rime:\n    x: int = 0\n\n\n"
         "@dataclasses.dataclass(frozen=True)\nclass Hail:\n    y: int = 0\n\n\n"
         "@dataclasses.dataclass(frozen=True)\nclass Sleet(Rime, Hail):\n    z: int = 0\n")


def test_a_frozen_dataclass_left_on_a_frozen_and_a_thawed_base_is_refused_as_the_running_python_does(
        daemon, image):
    # On Python 3.13, whose dataclass decorator refuses a frozen dataclass unless all its
    # dataclass bases are frozen, Sleet was told makeable, compile_method on it accepted,
    # while every new import of sleet failed.
    (image / "sleet.py").write_text(SLEET)
    client = open_session(daemon)
    try:
        result = ok(client, "compile_class_definition", dictionaryName="sleet",
                    source="@dataclasses.dataclass\nclass Hail:\n    y: int = 0\n")
        assert result["structuredContent"]["staleSubclasses"] == ["sleet.Sleet"]
        try:            # as a new session imports it, on the Python the daemon runs on
            exec((image / "sleet.py").read_text(), {})
            raised = None
        except TypeError as refused:
            raised = str(refused)
        if raised is None:
            assert "frozenConflicts" not in result["structuredContent"]
            ok(client, "compile_method", className="sleet.Sleet", source="def m(self):\n    return 1")
        else:
            assert raised == "cannot inherit frozen dataclass from a non-frozen one"
            assert result["structuredContent"]["frozenConflicts"] == {"sleet.Sleet": raised}
            message = error(client, "compile_method", "refused", className="sleet.Sleet",
                            source="def m(self):\n    return 1")
            assert message.startswith("sleet.Sleet cannot be made again as written")
            assert message.endswith("Neither frozen value agrees with its dataclass bases, some frozen "
                                    "and some not, which this Python's dataclass decorator refuses "
                                    "either way: change its base back")
            assert ("a new session's import of sleet fails until sleet.Hail is changed back (neither "
                    "frozen value agrees") in tool_text(result)
            assert "def m(self)" not in (image / "sleet.py").read_text()
    finally:
        client.close()
        (image / "sleet.py").unlink()


def test_the_hierarchy_of_a_generic_class_from_source_names_its_subscripted_subclasses(c):
    # Only `class Unsized(Box)` was named: `Box[int]` was matched as written, not as the Box
    # the live class statement subclasses.
    hierarchy = structured(c, "get_class_hierarchy", className="generic.box.Box")
    assert hierarchy["fromSource"] == "image module generic.box failed to import: ImportError: not yet"
    assert hierarchy["bases"] == ["typing.Generic[T]"]
    assert hierarchy["subclasses"] == ["generic.box.IntBox", "generic.users.StrBox", "generic.users.Unsized"]


def test_a_nested_class_named_without_its_module_points_at_its_top_level_class(c):
    # "Holder.Inner" was taken for the module Holder's class Inner: "no dictionary named Holder".
    message = error(c, "compile_method", "notFound", className="Holder.Inner", source="def m(self):\n    pass\n")
    assert "Holder.Inner is nested in the class fix.nest.Holder" in message
    assert "export_class_source fix.nest.Holder" in message


def test_compiling_a_method_a_walrus_took_as_the_class_was_made_names_what_still_holds_it(c):
    # The `:=` target was not counted: the note said "so  still hold the old get_x".
    result = ok(c, "compile_method", className="fix.held.Held", source="def get_x(self):\n    return 2\n")
    assert result["structuredContent"]["stillOld"] == ["x"]
    assert "so x still hold the old get_x in this session" in tool_text(result)
    assert run(c, "from fix.held import Held\n(Held().get_x(), Held().x)") == repr((2, 1))


def test_compiling_a_method_a_statement_in_a_class_level_block_took_names_what_still_holds_it(c):
    # The `if` holding it was judged instead: its test's `:=` target, flag, was named.
    result = ok(c, "compile_method", className="fix.blockheld.BlockHeld", source="def get_x(self):\n    return 2\n")
    assert result["structuredContent"]["stillOld"] == ["x"]
    assert ("read get_x as the class was made ('x = property(get_x)'), so x still hold the old get_x "
            "in this session") in tool_text(result)
    assert run(c, "from fix.blockheld import BlockHeld as B\n(B().get_x(), B().x, B.flag)") == repr((2, 1, True))


def test_compiling_a_method_the_class_body_used_says_what_still_holds_the_old_one(c):
    # `x = property(get_x)` kept the old get_x in the session, silently.
    result = ok(c, "compile_method", className="Derived", source="def get_x(self):\n    return 2\n")
    assert result["structuredContent"]["stillOld"] == ["x"]
    assert "x still hold the old get_x in this session until the class is made again" in tool_text(result)
    check = "from fix.derived import Derived\nDerived().x"
    assert run(c, check) == "1"
    ok(c, "abort")
    assert run(c, check) == "2"


def test_a_class_whose_body_rewrites_module_is_browsed_under_its_module_and_changed_there(daemon, image, c):
    # Said `hooked.Hook` (its __module__), left hooked.sub.Caller out of its subclasses, and
    # refused every edit saying hooked._core.Hook "is bound to hooked.Hook".
    hierarchy = structured(c, "get_class_hierarchy", className="Hook")
    assert hierarchy["superclasses"] == ["object", "hooked._core.Hook"]
    assert hierarchy["subclasses"] == ["hooked.sub.Caller"]
    assert structured(c, "describe_class", className="Caller")["mro"] == [
        "hooked.sub.Caller", "hooked._core.Hook", "object"]
    ok(c, "compile_method", className="Hook", source="def run(self):\n    return 2\n")
    assert '    __module__ = "hooked"\n' in (image / "hooked/_core.py").read_text()
    check = "from hooked.sub import Caller\nfrom hooked import Hook\n(Caller().more(), Hook)"
    assert run(c, check) == "(2, <class 'hooked.Hook'>)"
    other = open_session(daemon)    # a new session's worker imports it as committed
    assert run(other, check) == "(2, <class 'hooked.Hook'>)"
    other.close()


def test_a_name_bound_to_an_instance_of_a_class_whose_body_rewrites_module_names_its_class_where_written(
        image, c):
    # Said "an instance of hooked.Hook", which the tools answer `did you mean hooked._core.Hook?`.
    said = error(c, "compile_method", "refused", className="hooked.thing.Thing", source="def m(self):\n    pass\n")
    assert said.startswith("hooked.thing.Thing is bound to an instance of hooked._core.Hook once hooked.thing "
                           "is imported")
    assert "def m" not in (image / "hooked/thing.py").read_text()


def test_a_test_class_whose_body_rewrites_module_is_listed_and_run(c):
    # Left out of list_test_classes: judged by its __module__, which unittest names its tests by.
    assert "hooked.checks.RwTest" in structured(c, "list_test_classes")["testClasses"]
    ran = structured(c, "run_test_class", className="hooked.checks.RwTest")
    assert (ran["class"], ran["run"], ran["passed"]) == ("hooked.checks.RwTest", 1, 1)


def test_a_metaclass_whose_body_rewrites_module_gives_its_classes_their_class_side(c):
    # Widget's class side was empty: the metaclass was taken for no image class.
    methods = structured(c, "list_methods", className="Widget")["methods"]["class"]
    assert methods == [{"name": "hello", "definedIn": "hooked._meta.Meta", "metaclass": True}]


def test_a_module_that_is_no_string_is_no_crash_where_another_class_of_the_name_writes_one(c):
    # TypeError (unhashable type: 'list'), looked up among the strings hooked._meta.Meta writes.
    # Named by its qualified name alone, as Python's repr names a class whose __module__ is no str.
    assert structured(c, "describe_class", className="MetaUser")["bases"] == ["Meta"]


def test_a_nested_class_whose_body_rewrites_module_counts_as_made_where_its_statement_is(daemon, image):
    # No image class (its __module__ named pkg): delete_class of Outer went through, and
    # other, built on Outer.Inner, failed to import in every new session.
    files = {"pkg/__init__.py": "from pkg._core import Outer\n",
             "pkg/_core.py": 'class Outer:\n    class Inner:\n        __module__ = "pkg"\n',
             "other.py": "from pkg._core import Outer\n\n\nclass Sub(Outer.Inner):\n    pass\n"}
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    assert structured(client, "describe_class", className="other.Sub")["bases"] == ["pkg._core.Outer.Inner"]
    said = error(client, "delete_class", "refused", className="pkg._core.Outer")
    assert said.startswith("pkg._core.Outer.Inner has subclasses in the image: other.Sub (other line 4)")
    assert (image / "pkg/_core.py").read_text() == files["pkg/_core.py"]
    client.close()


def test_deleting_what_a_comprehensions_first_iterable_reads_as_the_module_runs_is_refused(daemon, image):
    # Taken as maybe not evaluated: deleted with a note, and jobs imported in no new session.
    files = {"jobs.py": ("class Job:\n    @staticmethod\n    def steps():\n        return (1, 2)\n\n\n"
                         "DOUBLED = [step * 2 for step in Job.steps()]\n")}
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    refused = call_tool(client, "delete_method", {"className": "jobs.Job", "selector": "steps"})
    assert [use["statement"] for use in refused["structuredContent"]["error"]["usedBy"]] == [
        "DOUBLED = [step * 2 for step in Job.steps()]"], refused
    assert (image / "jobs.py").read_text() == files["jobs.py"]
    client.close()


def test_deleting_what_only_an_asserts_message_reads_as_the_module_runs_is_noted(daemon, image):
    # The message runs only when the assertion fails: refused as a sure read before.
    files = {"jobs.py": ("class Job:\n    @staticmethod\n    def explain(n):\n        return str(n)\n\n\n"
                         "LIMIT = 3\nassert LIMIT > 0, Job.explain(LIMIT)\n")}
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    deleted = structured(client, "delete_method", className="jobs.Job", selector="explain")
    assert deleted["readAsItRuns"] == "assert LIMIT > 0, Job.explain(LIMIT)", deleted
    assert "def explain" not in (image / "jobs.py").read_text()
    fresh = open_session(daemon)
    assert not fresh.tool("execute_code", code="import jobs").get("isError")
    fresh.close()
    client.close()


def _deleted_then_run_anew(daemon, image, files, tool, arguments, gone, code):
    """`files` written, `tool` called with `arguments` in a session: `gone` is no longer in
    the (first) file; what a fresh session's run of `code` answers, the module imported anew."""
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    structured(client, tool, **arguments)
    assert gone not in (image / next(iter(files))).read_text()
    fresh = open_session(daemon)
    try:
        return run(fresh, code)
    finally:
        fresh.close()
        client.close()


def test_deleting_a_class_only_an_except_clause_names_as_the_module_runs_leaves_it_importing(daemon, image):
    # The clause's class is evaluated only when the try body raises: refused as a sure read before.
    files = {"limits.py": ("class Missing(Exception):\n    pass\n\n\ntry:\n    LIMIT = int('3')\n"
                           "except Missing:\n    LIMIT = 0\n")}
    assert _deleted_then_run_anew(daemon, image, files, "delete_class", dict(className="limits.Missing"),
                                  "class Missing", "import limits\nlimits.LIMIT") == "3"


def test_deleting_a_class_only_a_matchs_guard_reads_as_the_module_runs_leaves_it_importing(daemon, image):
    # A guard runs only when its pattern matches: refused as a sure read before.
    files = {"order.py": ("import sys\n\n\nclass Odd:\n    pass\n\n\nmatch sys.byteorder:\n"
                          "    case int() if Odd:\n        ORDER = None\n    case _:\n        ORDER = 1\n")}
    assert _deleted_then_run_anew(daemon, image, files, "delete_class", dict(className="order.Odd"),
                                  "class Odd", "import order\norder.ORDER") == "1"


def test_deleting_a_method_the_module_sets_anew_above_its_read_leaves_it_importing(daemon, image):
    # `setattr(Job, "run", fast_run)` above `RUN = Job.run`: refused as a sure read before.
    files = {"jobs.py": ("class Job:\n    def run(self):\n        return 1\n\n\ndef fast_run(self):\n"
                         "    return 2\n\n\nsetattr(Job, 'run', fast_run)\nRUN = Job.run\n")}
    assert _deleted_then_run_anew(daemon, image, files, "delete_method", dict(className="jobs.Job", selector="run"),
                                  "def run", "import jobs\njobs.Job().run()") == "2"


def test_deleting_a_function_a_function_the_module_calls_binds_again_leaves_it_importing(daemon, image):
    # `install()` binds `encode` as a global above `DEFAULT = encode`: refused as a sure read before.
    files = {"codec.py": ("def encode(text):\n    return text\n\n\ndef install():\n    global encode\n"
                          "    encode = str.upper\n\n\ninstall()\nDEFAULT = encode\n")}
    assert _deleted_then_run_anew(daemon, image, files, "delete_method", dict(className="codec", selector="encode"),
                                  "def encode", "import codec\ncodec.DEFAULT('a')") == "'A'"


@pytest.mark.parametrize("name, text", [
    # `DEFAULT = Parser()` above `Parser = functools.total_ordering(Parser)`: the module was
    # committed importing in no new session (NameError), the answer saying nothing.
    ("readfirst", "import functools\n\n\nclass Parser:\n    def __lt__(self, other):\n"
                  "        return False\n\n\nDEFAULT = Parser()\n"
                  "Parser = functools.total_ordering(Parser)\n"),
    # `try: from _no_such_fast_parser import Parser` / `except ImportError: pass` below the
    # class: the import was taken to bind the name, and the module, reading it, was committed
    # importing in no new session, the answer saying nothing.
    ("parser_mod", "class Parser:\n    def parse(self):\n        return 1\n\n\n"
                   "try:\n    from _no_such_fast_parser import Parser\n"
                   "except ImportError:\n    pass\n\n\nDEFAULT = Parser()\n"),
], ids=["read-above-a-rebinding", "an-import-that-failed"])
def test_deleting_a_class_its_module_reads_where_nothing_else_binds_it_is_refused(daemon, image, name, text):
    write_files(image, {f"{name}.py": text})   # the sessions opened below read it
    client = open_session(daemon)
    run(client, f"import {name}")
    said = error(client, "delete_class", "refused", className=f"{name}.Parser")
    assert "it failed with NameError: name 'Parser' is not defined" in said, said
    assert "class Parser" in (image / f"{name}.py").read_text()
    client.close()


def test_deleting_a_function_an_all_copied_whole_still_names_says_a_star_import_fails(daemon, image):
    # `__all__ = sorted(__all__)` was taken for taking names out again: no note, though
    # `from sorted_all import *` then failed (AttributeError).
    files = {"sorted_all.py": ("__all__ = ['helper', 'kept']\n__all__ = sorted(__all__)\n\n\n"
                               "def helper():\n    return 1\n\n\ndef kept():\n    return 2\n")}
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    deleted = ok(client, "delete_method", className="sorted_all", selector="helper")
    assert deleted["structuredContent"]["stillInAll"] == {
        "line": 1, "statement": "__all__ = ['helper', 'kept']"}, deleted
    assert "from sorted_all import *` now fails" in tool_text(deleted)
    fresh = open_session(daemon)
    assert "AttributeError" in run(fresh, "try:\n    from sorted_all import *\nexcept AttributeError as e:\n"
                                          "    r = 'AttributeError'\nr")
    fresh.close()
    client.close()


def test_deleting_a_class_an_all_leaves_out_says_nothing_of_a_star_import_failing(daemon, image):
    # The note said `from computed import *` now fails, though `__all__` excludes Hook by name.
    files = {"computed.py": ("class Hook:\n    pass\n\n\nclass Kept:\n    pass\n\n\n"
                             "__all__ = [name for name in dir() if name not in ('Hook',) and not name.startswith('_')]\n")}
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    deleted = ok(client, "delete_class", className="computed.Hook")
    assert "stillInAll" not in deleted["structuredContent"], deleted
    fresh = open_session(daemon)
    assert run(fresh, "from computed import *\nKept.__name__") == "'Kept'"
    fresh.close()
    client.close()


def test_deleting_a_helper_its_module_deletes_as_it_runs_is_refused(daemon, image):
    # `del helper, unused` at the end: deleted, tidy imported in no new session (NameError).
    files = {"tidy.py": ("def helper(x):\n    return x\n\n\ndef unused(x):\n    return x\n\n\n"
                         "VALUE = helper(1)\ndel helper, unused\n")}
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    refused = call_tool(client, "delete_method", {"className": "tidy", "selector": "unused"})
    assert refused["structuredContent"]["error"]["usedBy"] == [
        {"line": 10, "statement": "del helper, unused"}], refused
    assert (image / "tidy.py").read_text() == files["tidy.py"]
    client.close()


def test_deleting_a_method_a_function_the_module_calls_sets_anew_above_its_read_leaves_it_importing(daemon, image):
    # `install()` (`setattr(Job, "run", fast_run)`) above `RUN = Job.run`: refused as a sure read before.
    files = {"installed.py": ("class Job:\n    def run(self):\n        return 1\n\n\ndef fast_run(self):\n"
                              "    return 2\n\n\ndef install():\n    setattr(Job, 'run', fast_run)\n\n\n"
                              "install()\nRUN = Job.run\n")}
    assert _deleted_then_run_anew(daemon, image, files, "delete_method", dict(className="installed.Job", selector="run"),
                                  "def run", "import installed\ninstalled.Job().run()") == "2"


def test_deleting_a_class_an_all_takes_out_again_says_nothing_of_a_star_import_failing(daemon, image):
    # The note said `from pruned import *` now fails, though `__all__.remove` took Hook out.
    files = {"pruned.py": ("class Hook:\n    pass\n\n\nclass Kept:\n    pass\n\n\n"
                           "__all__ = ['Hook', 'Kept']\n__all__.remove('Hook')\n")}
    write_files(image, files)   # the sessions opened below read it
    client = open_session(daemon)
    deleted = ok(client, "delete_class", className="pruned.Hook")
    assert "stillInAll" not in deleted["structuredContent"], deleted
    fresh = open_session(daemon)
    assert run(fresh, "from pruned import *\nKept.__name__") == "'Kept'"
    fresh.close()
    client.close()


def test_a_class_nested_in_one_whose_body_rewrites_module_counts_as_made_where_its_statement_is(image, c):
    # Middle's __module__ (elsewhere) was compared with hooked.deep's: Leaf was no image
    # class, so delete_class of Base went through and hooked.deep failed to import.
    said = error(c, "delete_class", "refused", className="hooked.base.Base")
    assert said.startswith("hooked.base.Base has subclasses in the image: hooked.deep.Outer.Middle.Leaf "
                           "(hooked.deep line 8, in the class statement of hooked.deep.Outer)")
    assert (image / "hooked/base.py").read_text() == "class Base:\n    pass\n"


def test_a_class_whose_module_code_below_it_sets_is_changed_where_its_statement_is(daemon, image, c):
    # Refused, saying "is bound to late.Late ... not to the class its class statement makes";
    # a class redefined in place took the name late._core, which a new session's has not.
    ok(c, "compile_method", className="late._core.Late", source="def m(self):\n    return 2\n")
    ok(c, "compile_class_definition", dictionaryName="late._core",
       source="class Late:\n    def run(self):\n        return 5\n")
    assert (image / "late/_core.py").read_text().endswith('\n\nLate.__module__ = "late"\n')
    check = "import late\n(late.Late, late.Late().run(), late.Late().m())"
    assert run(c, check) == "(<class 'late.Late'>, 5, 2)"
    other = open_session(daemon)
    assert run(other, check) == "(<class 'late.Late'>, 5, 2)"
    other.close()


def test_a_class_whose_module_a_decorator_sets_is_refused_saying_so(image, c):
    # Said "is bound to dec.Dec ... not to the class its class statement makes": it is that class.
    said = error(c, "compile_method", "refused", className="dec._core.Dec", source="def m(self):\n    pass\n")
    assert said.startswith("dec._core.Dec is bound to a class whose __module__ ('dec') is set outside its "
                           "class statement (by a decorator, its metaclass, or code below it or in another module)")
    assert "def m" not in (image / "dec/_core.py").read_text()


def test_the_workspace_s_name_for_a_class_whose_body_rewrites_module_follows_its_re_import(c):
    # Kept the old class after abort: looked for in the module its __module__ names, none.
    run(c, "from hooked.sub import Caller\nCaller.more = lambda self: 'patched'")
    ok(c, "abort")
    assert run(c, "import hooked.sub\nCaller is hooked.sub.Caller") == "True"


def test_a_class_the_workspace_makes_like_an_image_class_whose_body_rewrites_module_stays_its_own(c):
    # The next execute_code bound Caller to hooked.sub.Caller, with no re-import at all.
    run(c, 'import hooked.sub\nclass Caller:\n    __module__ = "elsewhere"\n    x = "mine"\n')
    assert run(c, "(Caller.x, Caller is hooked.sub.Caller)") == "('mine', False)"


def test_a_workspace_object_claiming_to_be_a_class_fails_no_later_execute_code(c):
    # Its __class__ read as its kind, its missing __qualname__ then failed every later call.
    run(c, "class Liar:\n    __class__ = property(lambda self: type)\n\n\nheld = Liar()\n")
    assert run(c, "del held\n1 + 1") == "2"


def test_a_wrapper_the_workspace_makes_of_an_image_function_stays_the_workspace_s(daemon, image):
    # The next execute_code bound `total` back to shop.total: functools.wraps names it so.
    write_files(image, {"shop.py": "def total(x):\n    return x\n"})   # the sessions opened below read it
    client = open_session(daemon)
    run(client, "import functools, shop\n\n\ndef logged(f):\n    @functools.wraps(f)\n"
                "    def inner(*args):\n        return ('logged', f(*args))\n    return inner\n\n\n"
                "total = logged(shop.total)\n")
    assert run(client, "total(1)") == "('logged', 1)"
    client.close()


def test_an_image_module_s_getattr_raising_fails_no_execute_code(daemon, image):
    # Run for a workspace class naming the module: its KeyError failed every later call.
    lazy = "_LAZY = {}\n\n\ndef __getattr__(name):\n    return _LAZY[name]\n"
    write_files(image, {"lazy.py": lazy})   # the sessions opened below read it
    client = open_session(daemon)
    run(client, 'import lazy\n\n\nclass Other:\n    __module__ = "lazy"\n')
    assert run(client, "Other.__name__") == "'Other'"
    client.close()


def test_a_class_a_leftover_thread_binds_after_its_call_follows_a_re_import(tmp_path, daemon, image):
    # Bound once its call had ended, it was never noted as the module's: after the abort's
    # re-import the name still held the old class.
    go, bound = tmp_path / "go", tmp_path / "bound"
    write_files(image, {"shop.py": "class Cart:\n    pass\n"})   # the sessions opened below read it
    client = open_session(daemon)
    run(client, "import os, threading, time, shop\n\n\ndef late():\n    global Late\n"
                f"    while not os.path.exists({str(go)!r}):\n        time.sleep(0.01)\n"
                f"    from shop import Cart as Late\n    open({str(bound)!r}, 'w').close()\n\n\n"
                "threading.Thread(target=late).start()\n")
    go.touch()
    for _ in range(3000):   # the thread binds, then says so
        if bound.exists():
            break
        time.sleep(0.01)
    assert bound.exists()
    client.tool("abort")
    assert run(client, "Late is shop.Cart") == "True"
    client.close()


def test_a_workspace_class_named_after_a_sys_modules_entry_with_no_dict_fails_no_later_call(daemon, image):
    # Every execute_code after the one binding it failed with TypeError: vars() argument
    # must have __dict__ attribute.
    from test_tools_rewritten_module import ODD_MODULE
    write_files(image, {"shop.py": "class Cart:\n    pass\n"})   # the sessions opened below read it
    client = open_session(daemon)
    run(client, ODD_MODULE)
    assert run(client, "Named.__module__") == "'oddmod'"
    client.close()


def test_a_huge_method_name_is_cut_in_the_success_messages_and_kept_whole_in_structured_content(c):
    # A 100,000-character method name (a valid identifier) made each answer line 100 KB.
    huge, cut = "m" * 100_000, "m" * 200 + "... (100000 characters)"
    ok(c, "add_dictionary", dictionaryName="huge_names")
    ok(c, "compile_class_definition", source="class Huge:\n    pass\n", dictionaryName="huge_names")
    try:
        added = ok(c, "compile_method", className="huge_names.Huge", source=f"def {huge}(self):\n    return 1\n")
        deleted = ok(c, "delete_method", className="huge_names.Huge", selector=huge)
        for result, verb in ((added, "added"), (deleted, "deleted")):
            text = tool_text(result)
            assert text.startswith(f"{verb} huge_names.Huge.{cut}; committed") and len(text) < 1000, text[:300]
            assert result["structuredContent"]["selector"] == huge
    finally:
        ok(c, "remove_dictionary", dictionaryName="huge_names")


def test_a_huge_method_name_is_cut_in_the_carried_over_list_of_a_class_definition(c):
    # "carried over <100,000 characters>": the list repeated it whole.
    huge, cut = "m" * 100_000, "m" * 200 + "... (100000 characters)"
    ok(c, "add_dictionary", dictionaryName="huge_carried")
    ok(c, "compile_class_definition", source="class Huge:\n    pass\n", dictionaryName="huge_carried")
    try:
        ok(c, "compile_method", className="huge_carried.Huge", source=f"def {huge}(self):\n    return 1\n")
        result = ok(c, "compile_class_definition", source="class Huge:\n    x = 1\n", dictionaryName="huge_carried")
        text = tool_text(result)
        assert f"; carried over {cut}; committed" in text and len(text) < 1000, text[:300]
        assert result["structuredContent"]["carried"] == [huge]
    finally:
        ok(c, "remove_dictionary", dictionaryName="huge_carried")


def test_a_statement_holding_a_huge_name_is_cut_where_a_refusal_quotes_it(c):
    # The refusal quoted `@<100,000 characters>` whole, beside the name it had cut.
    huge, cut = "m" * 100_000, "m" * 200 + "... (100000 characters)"
    ok(c, "add_dictionary", dictionaryName="huge_quotes")
    try:
        ok(c, "compile_method", className="huge_quotes", source=f"def {huge}(f):\n    return f\n")
        ok(c, "compile_method", className="huge_quotes", source=f"@{huge}\ndef user():\n    return 1\n")
        refused = call_tool(c, "delete_method", {"className": "huge_quotes", "selector": huge})
        text, [used] = tool_text(refused), refused["structuredContent"]["error"]["usedBy"]
        assert used["statement"] == f"@{huge}"
        assert text.startswith(f"huge_quotes.{cut} is used by huge_quotes's own top-level code as it "
                               f"runs (line {used['line']}: '@{huge[:199]}... (100001 characters)'); deleted,") and len(text) < 1000, text[:300]
    finally:
        ok(c, "remove_dictionary", dictionaryName="huge_quotes")
