"""The example image a fresh daemon starts with, so every tool has something to do."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path

from gsmcpd.accounts import group_name
from gsmcpd.image.layout import LOCK_NAME, STATE_DIR

IMAGE_SUBDIR = "image"
# What a link loop in the image's way is said to be ("image X <problem>" reads on).
LINK_LOOP = f"cannot be reached: {os.strerror(errno.ELOOP)}"

EXAMPLE_FILES = {
    "shop/__init__.py": '''\
"""An example shop: products, a discounted product, a cart, and its tests."""
''',
    "shop/models.py": '''\
"""Products and a cart."""


class Product:
    """Something for sale, priced in cents."""

    currency = "EUR"

    def __init__(self, name, price_cents):
        self.name = name
        self.price_cents = price_cents

    def price(self):
        return self.price_cents

    def describe(self):
        return f"{self.name}: {self.price() / 100:.2f} {self.currency}"


class DiscountedProduct(Product):
    """A product sold at a percentage off."""

    def __init__(self, name, price_cents, percent_off):
        super().__init__(name, price_cents)
        self.percent_off = percent_off

    def price(self):
        return self.price_cents * (100 - self.percent_off) // 100


class Cart:
    """Products and quantities."""

    def __init__(self):
        self.lines = []

    def add(self, product, quantity=1):
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        self.lines.append((product, quantity))
        return self

    def total(self):
        return sum(product.price() * quantity for product, quantity in self.lines)

    @classmethod
    def of(cls, *products):
        cart = cls()
        for product in products:
            cart.add(product)
        return cart
''',
    "shop/test_models.py": '''\
"""Tests for shop.models, run with run_test_class."""

import unittest

from shop.models import Cart, DiscountedProduct, Product


class CartTest(unittest.TestCase):
    def test_empty_cart_totals_zero(self):
        self.assertEqual(Cart().total(), 0)

    def test_total_counts_quantities(self):
        cart = Cart().add(Product("pen", 150), 2)
        self.assertEqual(cart.total(), 300)

    def test_discount_applies(self):
        cart = Cart.of(DiscountedProduct("lamp", 2000, 25))
        self.assertEqual(cart.total(), 1500)

    def test_bad_quantity_is_refused(self):
        with self.assertRaises(ValueError):
            Cart().add(Product("pen", 150), 0)
''',
}


def image_dir_problem(image: Path, *, per_user: bool = False) -> str | None:
    """Why `image` cannot be served as an image directory, or None; `serve` and `check`
    both say it in these words. `per_user`: its sessions run as users' accounts."""
    from gsmcpd.image.store import sticky_state_problem   # the store only for this check
    if not image.exists():
        return _missing(image)
    if not image.is_dir():
        return "is not a directory"
    if not os.access(image, os.R_OK | os.X_OK):
        return "is not readable (no permission to list it)"
    held = _lock_dir_problem(image / STATE_DIR)
    if held:
        return f"cannot be served: {image / STATE_DIR}, where every session takes the image's lock, {held}"
    unwritable = _lock_impossible(image)
    if unwritable is not None:
        return (f"is not writable{unwritable} and has no {STATE_DIR}/{LOCK_NAME} yet: every session reads the "
                f"image under that lock, so gsmcpd must be able to create it once (make the "
                f"directory writable; under systemd, list it in ReadWritePaths=)")
    sticky = sticky_state_problem(str(image), any_account=per_user)
    if sticky:
        return "cannot be served: " + sticky
    return None


def not_setgid_warning(image: Path) -> str | None:
    """With per-user workers: an image its group may write whose setgid bit is off, so
    what a commit creates takes the committing account's own group, and the other
    accounts are shut out of it (the state directory first). `serve` and `check` both
    say it in these words."""
    try:
        info = image.stat()
    except OSError:
        return None   # image_dir_problem says why
    if not stat.S_ISDIR(info.st_mode) or not info.st_mode & stat.S_IWGRP or info.st_mode & stat.S_ISGID:
        return None
    group = group_name(info.st_gid)
    return (f"image {image} is writable by its group {group} but not setgid "
            f"(mode {stat.S_IMODE(info.st_mode):04o}): what a commit creates there (a module, a package, the "
            f"image's state directory {STATE_DIR}) takes the committing account's own group, not {group}, and "
            f"other accounts' commits to it are refused; make it setgid: chmod g+s {image} (what was made "
            f"before: chgrp -R {group} {image}, and chmod g+s on each directory in it)")


def _missing(image: Path) -> str:
    """Why `image`, which Path.exists() calls missing, is: a link loop is no directory to
    be made or named anew, but a link to mend."""
    if link_loop(image):
        return LINK_LOOP
    return "does not exist"


def link_loop(path: Path) -> bool:
    """Whether `path` is a link loop, which Path.exists() calls missing (as if it could be made)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _lock_dir_problem(state: Path) -> str | None:
    """Why the image's state directory, there, is none a session can take the lock in: a
    file, a link loop or a link to nothing (Path.exists() called both missing or not a directory, and
    _lock_impossible asked the image instead: check said OK, every session failed)."""
    try:
        info = os.stat(state)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return LINK_LOOP
        if os.path.islink(state):   # a session's mkdir meets the link, then follows it to nothing
            return f"is a link to {os.readlink(state)}, which does not exist"
        return None
    return None if stat.S_ISDIR(info.st_mode) else "is not a directory"


def _lock_impossible(image: Path) -> str | None:
    """None if a session can take the image's lock: the file exists (a read-only image
    serves once it has one), or the directory it goes in can be written. Else why not:
    "" where os.access says no (a read-only file system too, root included), or the error
    of making one there, tried and removed at once: os.access says yes to root for any
    directory, /proc's among them, where the first session's mkdir then failed."""
    state = image / STATE_DIR
    if (state / LOCK_NAME).exists():
        return None
    where = state if state.is_dir() else image
    if not os.access(where, os.W_OK | os.X_OK):
        return ""
    try:
        if where == state:   # the lock file goes there
            fd, probe = tempfile.mkstemp(prefix=".lock-probe-", dir=where)
            os.close(fd)
            os.unlink(probe)
        else:                # the state directory goes there
            os.rmdir(tempfile.mkdtemp(prefix=f"{STATE_DIR}-probe-", dir=where))
    except OSError as error:
        what = "a file" if where == state else "a directory"
        return f" (making {what} in it fails: {error.strerror or error})"
    return None


def ensure_default_image(state_dir: Path) -> Path:
    """The default image directory under `state_dir`, created with the example
    package on first call. Idempotent: an existing directory is never touched."""
    image_dir = Path(state_dir) / IMAGE_SUBDIR
    if image_dir.exists():
        return image_dir
    Path(state_dir).mkdir(mode=0o700, parents=True, exist_ok=True)   # as the daemon makes it
    # Built aside and renamed into place, so a crash never leaves half an image.
    staging = Path(tempfile.mkdtemp(prefix=".image-", dir=state_dir))
    try:
        for rel, text in EXAMPLE_FILES.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        os.rename(staging, image_dir)
    except FileExistsError:
        pass            # another process created it first; theirs stands
    except OSError as error:
        if not image_dir.exists():
            raise error
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return image_dir
