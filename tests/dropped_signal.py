"""A signal whose exception Python drops: raised inside a weakref callback, where it is
printed ("Exception ignored in") and the caller goes on, as a command did under load when
a Ctrl-C landed while an import's lock or a WeakKeyDictionary cleaned up."""

import signal
import weakref


def drop_a_signal(signum: int = signal.SIGINT) -> None:
    class Thing:
        pass

    thing = Thing()
    ref = weakref.ref(thing, lambda _: signal.raise_signal(signum))
    del thing   # the callback runs here
    assert ref() is None
