"""What protolab (running as root) may trust on disk: root-owned paths nobody else can change.

Everything protolab keeps between its steps (lab records, holders, pools, fio sockets) lives
under one private base, ``/run/protolab`` (mode 0700, owned by root, never removed). A path
another user could write or swap — a directory they own, a world-writable directory without
the sticky bit above it, a symlink — is refused with one line naming it and what to do.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import ProtolabError

#: The private base: holders, default lab work directories, fio server sockets.
PRIVATE_BASE = Path("/run/protolab")
#: Where the lab's work directories (record, pool, logs, server configs) live by default: not under /run,
#: which NFS-Ganesha and rpcbind get as a private, empty tmpfs (lab.ganesha.private_run).
LAB_BASE = Path("/var/lib/protolab")


class UnsafePath(ProtolabError):
    """A path protolab would trust can be changed by another user (or is a symlink)."""


def _owner_ok(st: os.stat_result, also: int | None = None) -> bool:
    return st.st_uid in (0, os.geteuid()) or (also is not None and st.st_uid == also)


def _why_unsafe_dir(st: os.stat_result, *, final: bool, also: int | None = None) -> str | None:
    """Why a directory with ``st`` could be changed by another user, or None."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if not _owner_ok(st, also):
        return f"is owned by uid {st.st_uid}, not root" + ("" if also is None else " or you")
    if st.st_mode & 0o022:
        # a sticky, root-owned directory (/tmp, /var/tmp) lets others add entries but not rename or remove
        # ours: fine for an ancestor, never for a directory protolab keeps its own files in
        if final or not st.st_mode & stat.S_ISVTX:
            return "is writable by group or others"
    return None


def check_ancestors(path: Path, *, invoker: bool = False) -> None:
    """Refuse ``path`` when a directory above it could be renamed or replaced by another user (``invoker``: the
    user who ran protolab through sudo counts as trusted too — results in their own project directory)."""
    also = invoking_user()[0] if invoker else None
    p = Path(os.path.abspath(path))
    for parent in reversed(p.parents):
        try:
            st = os.lstat(parent)
        except FileNotFoundError:
            return  # what does not exist yet is created by us, below checked ancestors
        except OSError as e:
            raise UnsafePath(f"{parent}: cannot check it ({e.strerror}); use a directory root owns") from None
        why = _why_unsafe_dir(st, final=False, also=also)
        if why:
            raise UnsafePath(f"{parent} {why}: another user could swap {p} under protolab; "
                             "use a directory whose parents only root can write")


def check_dir(path: Path) -> Path:
    """``path`` if it is a real directory owned by root that only root can write; UnsafePath otherwise."""
    check_ancestors(path)
    try:
        st = os.lstat(path)
    except OSError as e:
        raise UnsafePath(f"{path}: cannot check it ({e.strerror})") from None
    why = _why_unsafe_dir(st, final=True)
    if why:
        raise UnsafePath(f"{path} {why}; protolab keeps files only in directories that root owns and only root "
                         f"can write (remove it, or 'chown root: {path}; chmod go-w {path}' if it is yours)")
    return Path(os.path.abspath(path))


def check_workdir(path: Path) -> None:
    """A directory protolab would create or use (a lab work directory): refused now, before anything is created,
    when it or a parent could be changed by another user."""
    check_ancestors(path)
    if os.path.lexists(path):
        check_dir(path)


def secure_dir(path: Path, mode: int = 0o700) -> Path:
    """Create ``path`` (and missing parents) with ``mode`` where missing, then check it as ``check_dir`` does.

    A directory someone else made first (in /var/tmp, say) fails the check: it is refused, never used.
    """
    path = Path(os.path.abspath(path))
    check_ancestors(path)
    missing = []
    p = path
    while not os.path.lexists(p):
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, mode)
        except FileExistsError:
            pass  # made by someone else meanwhile: the check below decides
        except OSError as e:
            raise UnsafePath(f"{d}: cannot create it ({e.strerror})") from None
    return check_dir(path)


def private_base() -> Path:
    """The private base (created 0700 when missing; never removed)."""
    return secure_dir(PRIVATE_BASE)


def lab_base() -> Path:
    """The base of the lab's default work directories (created 0700 when missing; never removed)."""
    return secure_dir(LAB_BASE)


def private_dir(*parts: str) -> Path:
    """A directory under the private base (created 0700 when missing)."""
    base = private_base()
    return secure_dir(base.joinpath(*parts)) if parts else base


def check_file(path: Path, what: str = "file") -> Path:
    """``path`` if it is a regular file (not a symlink) owned by root that only root can write."""
    try:
        st = os.lstat(path)
    except OSError as e:
        raise UnsafePath(f"{what} {path}: cannot check it ({e.strerror})") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{what} {path} is not a regular file (a symlink or something else); give the real file")
    if not _owner_ok(st) or st.st_mode & 0o022:
        raise UnsafePath(f"{what} {path} can be changed by a user other than root (owner uid {st.st_uid}, mode "
                         f"{stat.S_IMODE(st.st_mode):o}); use a file root owns and only root can write")
    return path


def project_deps() -> Path:
    """The installed project's .deps (scripts/install-deps.sh's output): beside the package's source tree."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "src" / "protolab").is_dir():
            return parent / ".deps"
    return here.parents[2] / ".deps"


def check_library(path: str | Path, what: str = "library") -> Path:
    """A shared library protolab preloads into a server run as root: checked as ``check_program`` checks a program
    (the symlink followed once, root's file under root's directories), without the executable bit."""
    real = Path(os.path.realpath(path))
    try:
        check_ancestors(real)
    except UnsafePath as e:
        raise UnsafePath(f"{what} {path}: {e}") from None
    return check_file(real, what)


def check_program(path: str | Path, what: str = "program") -> Path:
    """An executable protolab may run as root: an absolute path to a root-owned file nobody else can change,
    under directories only root can change (a symlink is followed once, and its target checked)."""
    p = Path(path)
    if not p.is_absolute():
        raise UnsafePath(f"{what} {path}: give an absolute path")
    real = Path(os.path.realpath(p))
    try:
        check_ancestors(real)
    except UnsafePath as e:
        raise UnsafePath(f"{what} {path}: {e}") from None
    check_file(real, what)
    if not os.access(real, os.X_OK):
        raise UnsafePath(f"{what} {real} is not executable")
    return real


def open_nofollow(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never follows a symlink in the last component (O_NOFOLLOW, O_CLOEXEC).

    Use with a directory checked by ``check_dir``/``secure_dir``: then no component can be a symlink either.
    """
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePath(f"{path} is a symlink; protolab does not follow symlinks in its own directories") \
                from None
        if e.errno == errno.EEXIST:
            raise UnsafePath(f"{path} exists already; protolab creates this file itself: remove it (or give "
                             "another directory)") from None
        raise


def invoking_user() -> tuple[int, int]:
    """(uid, gid) of the person who ran protolab: sudo's SUDO_UID/SUDO_GID when root came through sudo."""
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        try:
            su, sg = int(os.environ.get("SUDO_UID", "")), int(os.environ.get("SUDO_GID", ""))
            if su > 0:
                return su, sg
        except ValueError:
            pass
    return uid, gid


def apply_umask() -> None:
    """Run directories 0750 and their files 0640 (fio's too): plans, hosts and logs stay private to root and its
    group unless the operator widens it with PROTOLAB_UMASK (e.g. 022 for results shared on a team server)."""
    raw = os.environ.get("PROTOLAB_UMASK", "027")
    try:
        mask = int(raw, 8)
        if not 0 <= mask <= 0o777:
            raise ValueError
    except ValueError:
        raise ProtolabError(f"PROTOLAB_UMASK={raw}: give an octal umask such as 027 or 022") from None
    os.umask(mask)
