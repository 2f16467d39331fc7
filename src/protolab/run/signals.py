"""SIGINT, SIGTERM and SIGHUP end a run the same way, and none of them can abandon a teardown.

The first signal raises KeyboardInterrupt where the run is (fio is stopped by its
adapter, then the session tears the testbed down and marks the manifest); later
signals are ignored. Inside `protect()` (the teardown) a first signal is held
and raised when the protected block ends without an error of its own.
"""

from __future__ import annotations

import contextlib
import signal
import sys


class Stopper:
    """Installs the handlers and remembers the signal that stopped the run."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._protected = 0
        self._pending = False

    def _handler(self, signum, frame) -> None:
        if self.signum is not None:
            return
        self.signum = signum
        if self._protected:
            self._pending = True
            return
        raise KeyboardInterrupt(signal.Signals(signum).name)

    @contextlib.contextmanager
    def installed(self):
        """The handlers for the duration of the block; the previous ones after it.

        Python prints "Exception ignored in ..." with a traceback when a callback it cannot unwind (an at-fork
        handler, a finaliser) raises; the handler's own KeyboardInterrupt is kept quiet there, since `check`
        raises it again where the run can end cleanly. Every other unraisable exception is printed as before.
        """
        before = {s: signal.signal(s, self._handler) for s in self.SIGNALS}
        hook = sys.unraisablehook

        def quiet(unraisable) -> None:
            if not (self.signum is not None and isinstance(unraisable.exc_value, KeyboardInterrupt)):
                hook(unraisable)

        sys.unraisablehook = quiet
        try:
            yield self
        finally:
            sys.unraisablehook = hook
            for s, h in before.items():
                signal.signal(s, h)

    def check(self) -> None:
        """Raise the caught signal again if its KeyboardInterrupt was swallowed.

        Python ignores an exception raised in some callbacks (e.g. ``os.fork``'s at-fork handlers, which the
        report's drawing workers run): a signal landing there would otherwise be lost and the run end "complete".
        """
        if self.signum is not None and not self._protected:
            raise KeyboardInterrupt(self.name)

    def protect(self) -> "_Protected":
        """A block no signal interrupts (its signal is raised after it, if nothing else went wrong)."""
        return _Protected(self)

    @property
    def name(self) -> str:
        """The signal's name (SIGINT if none was caught: Ctrl-C raised by Python itself)."""
        return signal.Signals(self.signum).name if self.signum else "SIGINT"

    @property
    def exit_code(self) -> int:
        """128 + the signal's number."""
        return 128 + (self.signum or signal.SIGINT)


class _Protected:
    def __init__(self, stopper: Stopper):
        self.stopper = stopper

    def __enter__(self):
        self.stopper._protected += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        s = self.stopper
        s._protected -= 1
        if not s._protected and s._pending:
            s._pending = False
            if exc_type is None:
                raise KeyboardInterrupt(s.name)
        return False
