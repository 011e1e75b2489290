"""Supervisor: what it logs of the lifetime policy's actions, on a clock the test moves."""

import logging
from types import SimpleNamespace

from gsmcpd.router.lifetime import LifetimeSettings
from gsmcpd.router.supervision import Supervisor


class ClockLoop:
    """The loop's timer surface on a clock the test sets; `fire` runs the armed timer."""

    def __init__(self):
        self.now = 0.0
        self.armed = None

    def time(self):
        return self.now

    def call_at(self, when, callback):
        self.armed = (when, callback)
        return SimpleNamespace(cancel=lambda: None)

    def fire(self, at):
        self.now = at
        _, callback = self.armed
        callback()


def test_a_stall_is_logged_as_the_time_since_the_timers_last_ran_which_is_what_is_forgiven(caplog):
    # It said "maintenance ran 4000s late" of a pass due at 120 and run at 4060: 3940 s late.
    loop = ClockLoop()
    Supervisor(SimpleNamespace(loop=loop, config=LifetimeSettings()))
    loop.fire(60.0)                       # the first maintenance pass, on time
    assert loop.armed[0] == 120.0         # the next one is due at 120
    caplog.set_level(logging.WARNING, logger="gsmcpd.lifetime")
    loop.fire(4060.0)                     # the host slept through it
    assert [record.getMessage() for record in caplog.records] == [
        "lifetime timers last ran 4000s ago (host suspended, or the loop stalled?); "
        "idle clocks forgiven that long"]
