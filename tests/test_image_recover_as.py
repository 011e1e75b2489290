"""The image's recovery run in a child as the owner of its state directory (a root
router without CAP_DAC_OVERRIDE may not write one a user's commit made)."""

import os
import pwd

import pytest

from gsmcpd.image.recover_as import recover_as_owner
from helpers import searchable_dir

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switches to another account: needs root")


@pytest.fixture
def nobodys_image():
    nobody = pwd.getpwnam("nobody")
    with searchable_dir() as image:
        state = image / ".gsmcpd"
        state.mkdir(mode=0o700)
        os.chown(state, nobody.pw_uid, nobody.pw_gid)
        yield image, nobody


def test_the_recovery_runs_as_the_state_directorys_owner_and_says_whether_it_finished_a_commit(nobodys_image):
    image, nobody = nobodys_image

    def recover():
        return os.getresuid() == (nobody.pw_uid,) * 3 and os.getgroups() == os.getgrouplist("nobody", nobody.pw_gid)

    assert recover_as_owner(image, recover) is True
    assert recover_as_owner(image, lambda: False) is False


def test_a_recovery_failing_as_the_owner_raises_its_reason_naming_the_account(nobodys_image):
    image, _ = nobodys_image

    def recover():
        raise PermissionError(13, "Permission denied", ".gsmcpd/journal.jsonl")

    with pytest.raises(OSError, match=r"^\[Errno 13\] Permission denied: '.gsmcpd/journal.jsonl' "
                                      r"\(as account nobody\)$"):
        recover_as_owner(image, recover)


def test_a_state_directory_of_no_account_is_refused(nobodys_image):
    image, _ = nobodys_image
    os.chown(image / ".gsmcpd", 4242424, 4242424)
    with pytest.raises(PermissionError, match="belongs to uid 4242424, which names no account"):
        recover_as_owner(image, lambda: True)
