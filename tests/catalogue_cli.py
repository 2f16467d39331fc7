"""`protolab ARGS` in the test's own process, as the console script runs it (one-line errors, exit codes)."""

from __future__ import annotations

import os
import sys


def protolab(capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `protolab ARGS`; the process's umask is left as it was."""
    from protolab.commands import main

    argv, mask = sys.argv, os.umask(0o022)
    os.umask(mask)
    sys.argv = ["protolab", *map(str, args)]
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0
    finally:
        sys.argv = argv
        os.umask(mask)
    got = capsys.readouterr()
    return code, got.out, got.err
