"""Errors a user can cause. The CLI prints them on one line and exits 2."""


def one_line(text: str) -> str:
    """``text`` as one printable line: a plan's key or value may hold a newline or a terminal escape."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


class ProtolabError(Exception):
    """An error the user can fix; the message names the file, field or command and what to do."""

    exit_code = 2

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(str(message)))


class PlanError(ProtolabError):
    """The plan file is missing, unreadable or invalid."""


class TargetError(ProtolabError):
    """A target cannot be used as asked (for example, it holds data and allow_overwrite is not set)."""


class ToolError(ProtolabError):
    """An external program (fio, ip, tc, tgtadm, …) is missing or failed."""


class Interrupted(ProtolabError):
    """The user pressed Ctrl-C; what was measured stays on disk."""

    exit_code = 130
