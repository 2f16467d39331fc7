"""How the console script (`protolab`, and ``python -m protolab.cli``) ends: main(), then, after a command that ended
normally with nothing left running, leave without freeing the interpreter's objects one by one.

Every file is written and closed by then (atomically); a 10,000-window report's records took about 0.9 s to
free at exit (issue 25). A thread still running (none should be) gets Python's usual shutdown instead. Tests
call protolab.cli.main() in their own process and keep the usual exit.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable


def leave_after(main: Callable[[], None]) -> None:
    """Run ``main``; on its SystemExit with nothing left running, flush stdout and stderr and os._exit."""
    try:
        main()
    except SystemExit as e:
        code = e.code
        if (code is None or isinstance(code, int)) and not any(
                t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (OSError, ValueError):  # a closed pipe: let Python's own exit say so
                raise e from None
            os._exit(code or 0)
        raise

