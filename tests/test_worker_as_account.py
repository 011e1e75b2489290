"""Work done in a child switched to another account (as_account.said_as)."""

import os
import pwd

import pytest

from gsmcpd.worker.as_account import SAID_MAX, said_as

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switches to another account: needs root")


def test_the_work_runs_as_the_account_with_its_groups_and_its_words_come_back():
    nobody = pwd.getpwnam("nobody")
    said = said_as(nobody.pw_uid, nobody.pw_gid, [nobody.pw_gid],
                   lambda: repr((os.getresuid(), os.getresgid(), os.getgroups())).encode(),
                   lambda error: b"failed: " + repr(error).encode())
    assert said == repr(((nobody.pw_uid,) * 3, (nobody.pw_gid,) * 3, [nobody.pw_gid])).encode()
    assert os.geteuid() == 0   # the parent stays as it was


def test_what_the_work_raises_is_said_by_failed_and_a_long_word_is_cut():
    nobody = pwd.getpwnam("nobody")

    def work():
        raise ValueError("no")

    assert said_as(nobody.pw_uid, nobody.pw_gid, [], work, lambda error: b"failed: " + str(error).encode()) \
        == b"failed: no"
    assert said_as(nobody.pw_uid, nobody.pw_gid, [], lambda: b"x" * (SAID_MAX + 10), repr) == b"x" * SAID_MAX


def test_a_switch_refused_is_said_by_failed():
    # Back to root from nobody is refused: the child's setresuid raises, its parent hears why.
    nobody = pwd.getpwnam("nobody")

    def work():
        os.setresuid(0, 0, 0)
        return b"root again"

    said = said_as(nobody.pw_uid, nobody.pw_gid, [], work, lambda error: type(error).__name__.encode())
    assert said == b"PermissionError"
