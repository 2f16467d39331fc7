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
#: which NFS-Ganesha and rpcbind get as a private, empty tmpfs (lab.servers.ganesha.private_run).
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
    """Create ``path`` (and missing parents) with ``mode`` where missing (`make_dir`), then check it as
    ``check_dir`` does: protolab's own private directories, under parents only root can change.

    A directory someone else made first (in /var/tmp, say) fails the check: it is refused, never used.
    """
    check_ancestors(path)  # as any user: refused before anything is made
    make_dir(path, mode, private=True)
    return check_dir(path)


def make_dir(path: Path, mode: int = 0o777, *, exist_ok: bool = True, invoker: bool = False,
             private: bool = False) -> Path:
    """Create ``path`` (and missing parents) where another user may write a parent (/tmp, a shared results folder),
    then check what is there before anything is written in it: UnsafePath (one line) otherwise.

    Each missing directory is made by ``mkdir`` (which never follows a link) relative to its parent's descriptor,
    opened without following links and checked by ``fstat``: a real directory owned by this process (one another
    user made between a check and the ``mkdir`` is refused), and as root writable by no one else. An existing
    ``path`` passes only as a real directory, and as root one that root (``invoker``: or sudo's user) owns and no
    one else can write, under parents no other user can swap (`check_ancestors`: sudo's user's own directories count
    as root's unless ``private``). ``exist_ok=False``: ``path`` must be new. Modes come from ``mode`` and the umask.
    """
    path = Path(os.path.abspath(path))
    root = os.geteuid() == 0
    if root:
        check_ancestors(path, invoker=not private)  # the sudo user's own tree may hold root's run directories
    missing = []
    base = path
    while not os.path.lexists(base):
        missing.append(base.name)
        base = base.parent
    if not missing and not exist_ok:
        raise UnsafePath(f"{path} exists already; protolab makes it new: give another path")
    try:
        # the deepest existing directory: as root, check_ancestors vouched for it (or it is ``path``, opened
        # without following a link); as another user, that user's own permissions protect them
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if missing else os.O_NOFOLLOW))
    except OSError as e:
        raise UnsafePath(f"{base} {_open_error(e, base)}; give a real directory of yours") from None
    try:
        if not missing:
            st = os.fstat(fd)
            why = _why_unsafe_dir(st, final=True, also=invoking_user()[0] if invoker else None) if root else None
            if why:
                raise UnsafePath(f"{path} {why}; protolab writes only in directories that root alone can write: "
                                 "give another path (or remove it, or 'chmod go-w' it if it is yours)")
        here = base
        for name in reversed(missing):
            here = here / name
            try:
                os.mkdir(name, mode, dir_fd=fd)
            except FileExistsError:
                if here == path and not exist_ok:
                    raise UnsafePath(f"{path} was created by someone else meanwhile; give another path") from None
            except OSError as e:
                raise UnsafePath(f"{here}: cannot create it ({e.strerror}); give another path") from None
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as e:
                raise UnsafePath(f"{here} {_open_error(e, name, fd)} where protolab was making a directory (another "
                                 f"user can write {here.parent}): remove it, or give a directory only you can "
                                 "write") from None
            os.close(fd)
            fd = sub
            st = os.fstat(fd)
            # what we did not make (another user won the race to mkdir) is never used, whoever owns it
            if st.st_uid != os.geteuid() or (root and st.st_mode & 0o022):
                raise UnsafePath(f"{here} was made by uid {st.st_uid} (mode {stat.S_IMODE(st.st_mode):o}), not by "
                                 f"protolab: another user can write {here.parent}; remove it, or give a "
                                 "directory only you can write")
    finally:
        os.close(fd)
    return path


def _open_error(e: OSError, name: Path | str, dir_fd: int | None = None) -> str:
    """Why a directory could not be opened without following a link, in words (ENOTDIR is also a link's)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        return "is a symlink"
    if st is not None and not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    return f"cannot be opened ({e.strerror})"


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
    if ~mask & 0o022:  # a directory protolab makes that others can write is one it would then refuse (make_dir)
        raise ProtolabError(f"PROTOLAB_UMASK={raw} lets other users write protolab's files and directories; give "
                            "027 or 022")
    os.umask(mask)
