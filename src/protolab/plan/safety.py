"""What a plan may say and nothing more: safe names, allow-listed fio and ssh options, plain values.

A plan is data that teams pass around like Iometer files. Nothing in it may run a
command, name a file other than its targets, write a log, change the machine or
change the access spec behind protolab's back. Each check here raises ValueError
with a message that names the option and what to write instead; the model and the
loader turn it into one line with the file and field.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..conventions import digits

#: Names of plans, workloads, configurations, targets and hosts: they become parts of file names.
NAME_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")
NAME_RULE = "1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"

#: fio options a plan may set: how an engine submits and completes I/O, and how random offsets and
#: buffers are generated. None names a file, runs a command, writes a log, pins CPUs or changes the
#: access spec (read/write mix, sizes, depth, rate, duration), which the plan's own fields own.
FIO_OPTIONS_ALLOWED: dict[str, str] = {
    "iodepth_batch": "int", "iodepth_batch_submit": "int", "iodepth_batch_complete": "int",
    "iodepth_batch_complete_min": "int", "iodepth_batch_complete_max": "int", "iodepth_low": "int",
    "io_submit_mode": "word", "hipri": "bool", "hipri_percentage": "int", "fixedbufs": "bool",
    "registerfiles": "bool", "sqthread_poll": "bool", "nonvectored": "int", "force_async": "int",
    "userspace_reap": "bool", "nowait": "bool", "serialize_overlap": "bool",
    "norandommap": "bool", "softrandommap": "bool", "randrepeat": "bool", "allrandrepeat": "bool",
    "randseed": "int", "random_generator": "word",
    "refill_buffers": "bool", "scramble_buffers": "bool", "zero_buffers": "bool",
    "buffer_compress_percentage": "int", "buffer_compress_chunk": "int", "dedupe_percentage": "int",
    "iomem_align": "int", "clocksource": "word", "thread": "bool",
}

_WANTED = {"word": "a word of letters, digits, ., _, + or -", "bool": "write a true or false"}
_WORDS = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")

#: fio's verification options (its HOWTO, "Verification"): method.verify sets them.
VERIFY_OPTIONS = (
    "verify", "do_verify", "verify_only", "verify_offset", "verify_interval", "verify_pattern", "verify_fatal",
    "verify_dump", "verify_async", "verify_async_cpus", "verify_backlog", "verify_backlog_batch",
    "verify_state_save", "verify_state_load", "verifysort", "verifysort_nr", "verify_header_seed",
    "experimental_verify", "trim_verify_zero",
)

#: Refused options that users reach for, with the plan field that does the job.
FIO_INSTEAD: dict[str, str] = {
    **dict.fromkeys(["rw", "readwrite", "rwmixread", "rwmixwrite", "percentage_random"],
                    "set the workload's read_pct and random_pct"),
    **dict.fromkeys(["bs", "blocksize", "bssplit", "bsrange", "blocksize_range", "ba", "blockalign"],
                    "set the workload's block_size"),
    "iodepth": "set oio in load_points or in the workload",
    "numjobs": "set streams in load_points",
    **dict.fromkeys(["size", "io_size", "filesize", "offset", "offset_increment", "number_ios", "fill_device"],
                    "set the target's size or method.data_size"),
    **dict.fromkeys(["filename", "directory", "filename_format", "nrfiles", "opendir", "uri", "nfs_url"],
                    "name the storage in [targets] or the configuration's target"),
    **dict.fromkeys(["runtime", "timeout", "time_based", "ramp_time", "startdelay", "loops"],
                    "set method.duration and method.warmup"),
    **dict.fromkeys(["rate", "rate_iops", "rate_min", "rate_iops_min"], "set the workload's rate_iops"),
    "rate_process": "set the workload's arrivals",
    **dict.fromkeys(["thinktime", "thinktime_blocks", "thinktime_spin", "thinktime_blocks_type", "thinktime_iotime"],
                    "set the workload's think_time and think_every, or bursts"),
    **dict.fromkeys(["random_distribution", "zonemode", "zonerange", "zonesize"], "set the workload's hot_zones"),
    **dict.fromkeys(["read_iolog", "replay_redirect", "replay_time_scale", "replay_no_stall", "replay_align",
                     "replay_scale"], "set the workload's replay (a trace protolab checks and fits to the target)"),
    **dict.fromkeys(["direct", "buffered"], "set the configuration's direct"),
    "ioengine": "set the configuration's ioengine",
    **dict.fromkeys(["exec_prerun", "exec_postrun"], "a plan cannot run commands"),
    **dict.fromkeys(["write_iolog", "write_bw_log", "write_lat_log", "write_iops_log",
                     "write_hist_log", "output", "lockfile", "trigger", "trigger_file"],
                    "a plan cannot make protolab read or write files other than its targets; "
                    "protolab logs what it needs in the run directory"),
    **dict.fromkeys(["ioscheduler", "cpus_allowed", "cpumask", "cpus_allowed_policy", "numa_cpu_nodes",
                     "numa_mem_policy", "cgroup", "uid", "gid", "nice", "prio", "prioclass",
                     "sqthread_poll_cpu", "gtod_cpu", "hugepage-size", "lockmem"],
                    "a plan cannot change the machine"),
    **dict.fromkeys(["unlink", "unlink_each_loop", "allow_file_create", "create_only", "create_on_open",
                     "allow_mounted_write", "overwrite", "fallocate", "trim_percentage"],
                    "protolab creates and keeps its data files itself"),
    **dict.fromkeys(VERIFY_OPTIONS, "set method.verify = \"crc32c\" (or md5, sha256): protolab drives fio's verify "
                    "itself and reads every block written back after each window"),
}


def has_control(text: str) -> bool:
    """True when ``text`` holds a control character (a newline would inject lines into a job file)."""
    return any(ord(ch) < 32 or 127 <= ord(ch) < 160 or ch in "\u2028\u2029" for ch in text)


def check_name(value: Any, kind: str) -> str:
    """``value`` if it is a safe name for a ``kind`` (file names are built from it), else ValueError."""
    if not isinstance(value, str):
        raise ValueError(f"a {kind} name must be a string ({NAME_RULE}), got {type(value).__name__}")
    if not NAME_RE.match(value):
        shown = repr(value) if len(value) <= 70 else repr(value[:64]) + f"… ({len(value)} characters)"
        raise ValueError(f"{kind} name {shown} is not allowed; use {NAME_RULE}")
    return value


def check_text(value: str, field: str, limit: int = 1000) -> str:
    """A free-text value (a description): no control characters but newlines and tabs, at most ``limit``."""
    if has_control(value.replace("\n", " ").replace("\t", " ")):
        raise ValueError(f"{field} holds a control character; remove it")
    if len(value) > limit:
        raise ValueError(f"{field} is longer than {limit} characters; shorten it")
    return value


#: The values fio 3.33 accepts for the word options (HOWTO), so `validate` refuses what fio would.
FIO_WORDS: dict[str, tuple[str, ...]] = {
    "random_generator": ("tausworthe", "lfsr", "tausworthe64"),
    "io_submit_mode": ("inline", "offload"),
    "clocksource": ("gettimeofday", "clock_gettime", "cpu"),
}
#: Options that are percentages (0-100).
FIO_PERCENT = ("hipri_percentage", "buffer_compress_percentage", "dedupe_percentage")


def fio_value(option: str, value: Any) -> str:
    """A plan's value for an allowed fio option, as the job file writes it; ValueError otherwise."""
    kind = FIO_OPTIONS_ALLOWED[option]
    if option in FIO_WORDS and isinstance(value, str) and value not in FIO_WORDS[option]:
        raise ValueError(f"fio option {option!r}: {value!r} is not one of {', '.join(FIO_WORDS[option])}")
    if option in FIO_PERCENT and isinstance(value, int) and not isinstance(value, bool) and value > 100:
        raise ValueError(f"fio option {option!r} is a percentage (0 to 100), got {value!r}")
    if isinstance(value, bool):
        if kind != "bool":
            raise ValueError(f"fio option {option!r} takes a number, got {value!r}")
        return "1" if value else "0"
    if isinstance(value, int):
        if kind == "word" or value < 0 or value > 2**31:
            raise ValueError(f"fio option {option!r}: {value!r} is out of range")
        if kind == "bool" and value not in (0, 1):
            raise ValueError(f"fio option {option!r} is true or false, got {value!r}")
        return str(value)
    if isinstance(value, float):
        raise ValueError(f"fio option {option!r} takes a whole number, got {value!r}")
    if isinstance(value, str):
        if kind == "word" and _WORDS.match(value):
            return value
        raise ValueError(f"fio option {option!r}: value {value!r} is not allowed "
                         f"({_WANTED.get(kind, 'write a whole number')})")
    raise ValueError(f"fio option {option!r} takes a single value, got {type(value).__name__}")


def check_fio_options(options: Any) -> dict[str, str]:
    """A configuration's ``fio = {…}`` table checked against the allow-list; values rendered for a job file."""
    if not isinstance(options, dict):
        raise ValueError("fio must be a table of fio options, e.g. fio = { iodepth_batch_submit = 8 }")
    out: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str) or has_control(key):
            raise ValueError(f"fio option {key!r} is not a valid option name")
        if key not in FIO_OPTIONS_ALLOWED:
            instead = FIO_INSTEAD.get(key)
            why = (f"{instead}" if instead else
                   "only options that tune how an engine submits and completes I/O are allowed: "
                   + ", ".join(sorted(FIO_OPTIONS_ALLOWED)))
            raise ValueError(f"fio option {key!r} is not allowed in a plan; {why}")
        out[key] = fio_value(key, value)
    return out


ENGINE_RE = re.compile(r"^[a-z0-9_]{1,32}$")
#: Engines that only read and write the target. fio also lists engines that run a program
#: (exec), create, truncate or delete files (filecreate, ftruncate, filedelete), open sockets
#: (net) or pass SCSI commands (sg): none of those measures storage, so a plan cannot pick them.
LOCAL_ENGINES = ("io_uring", "libaio", "psync", "pvsync", "pvsync2", "sync", "vsync", "posixaio", "mmap", "null")


def check_engine(value: Any) -> str:
    """An ioengine name as fio lists them (never 'external:…' or a path), one of LOCAL_ENGINES."""
    if not isinstance(value, str) or not ENGINE_RE.match(value):
        raise ValueError(f"ioengine {value!r} is not an engine name; use one 'fio --enghelp' lists, "
                         "e.g. io_uring, libaio or psync")
    if value not in LOCAL_ENGINES:
        raise ValueError(f"ioengine {value!r} is not allowed in a plan; use one of {', '.join(LOCAL_ENGINES)}")
    return value


#: ssh -o keys a plan may set: none names a file, runs a command, opens a channel, touches the known hosts or
#: aliases the host (an ssh config file is the operator's, PROTOLAB_SSH_CONFIG, never a plan's).
SSH_O_ALLOWED = {
    "batchmode", "connecttimeout", "connectionattempts", "serveraliveinterval", "serveralivecountmax",
    "tcpkeepalive", "compression", "ciphers", "macs", "kexalgorithms", "hostkeyalgorithms",
    "pubkeyacceptedalgorithms", "pubkeyacceptedkeytypes", "ipqos", "rekeylimit", "addressfamily", "loglevel",
    "identitiesonly", "user", "port", "preferredauthentications", "passwordauthentication",
    "kbdinteractiveauthentication",
}
_SSH_VALUE = re.compile(r"^[A-Za-z0-9_.,:@/~+=-]{1,256}$")
_SSH_O_SHOWN = "ConnectTimeout, ConnectionAttempts, ServerAliveInterval, User, Port, BatchMode, Ciphers, LogLevel"


def ssh_home() -> str:
    """The ~/.ssh whose keys a plan's ``-i`` may name: the invoking user's (sudo's SUDO_UID), else root's."""
    import os
    import pwd

    from ..trust import invoking_user

    uid, _ = invoking_user()
    try:
        home = pwd.getpwuid(uid).pw_dir
    except KeyError:
        home = os.path.expanduser("~")
    return os.path.join(home, ".ssh")


def _identity(value: str) -> str:
    """``-i FILE``: a key under the invoking user's ~/.ssh (after ``~`` and symlinks), nothing else."""
    import os

    home = ssh_home()
    path = os.path.expanduser(value.replace("~", os.path.dirname(home), 1)) if value.startswith("~") else value
    if not os.path.isabs(path):
        path = os.path.join(home, path)
    real, base = os.path.realpath(path), os.path.realpath(home)
    if os.path.commonpath([real, base]) != base or real == base:
        raise ValueError(f"ssh_options: -i {value!r} is not a key under {home}; a plan may name only a key in "
                         "the ~/.ssh of the user who runs protolab (or give ssh settings in PROTOLAB_SSH_CONFIG)")
    return real


def check_ssh_options(options: Any) -> list[str]:
    """``ssh_options`` limited to -p PORT, -i KEY (under the invoking user's ~/.ssh) and -o KEY=VALUE with keys
    that name no file, run nothing and leave the known hosts alone."""
    if not isinstance(options, list):
        raise ValueError("ssh_options must be a list of strings, e.g. ['-p', '2222', '-o', 'ConnectTimeout=5']")
    out: list[str] = []
    items = list(options)
    i = 0
    while i < len(items):
        flag = items[i]
        if not isinstance(flag, str) or has_control(flag):
            raise ValueError(f"ssh_options[{i}] must be a string without control characters")
        value: Any
        if flag in ("-i", "-p", "-o"):
            if i + 1 >= len(items):
                raise ValueError(f"ssh_options: {flag} needs a value after it")
            value, i = items[i + 1], i + 2
        elif len(flag) > 2 and flag[:2] in ("-i", "-p", "-o"):
            flag, value, i = flag[:2], flag[2:], i + 1
        elif flag.startswith("-F"):
            raise ValueError("ssh_options: -F is not allowed in a plan (ssh runs what a config file says, as "
                             "root); give it to protolab as PROTOLAB_SSH_CONFIG=FILE")
        else:
            raise ValueError(f"ssh_options: {flag!r} is not allowed; a plan may give only -p PORT, -i KEY (in "
                             "your ~/.ssh) and -o KEY=VALUE")
        if not isinstance(value, str):
            raise ValueError(f"ssh_options: the value of {flag} must be a string")
        if flag == "-o":
            key = value.split("=", 1)[0].strip().lower()
            if "=" not in value or key not in SSH_O_ALLOWED:
                raise ValueError(f"ssh_options: -o {value!r} is not allowed (keys that name files, run commands, "
                                 "touch the known hosts or alias the host belong in the operator's "
                                 "PROTOLAB_SSH_CONFIG file); "
                                 f"allowed keys include {_SSH_O_SHOWN}")
        if not _SSH_VALUE.match(value) or value.startswith("-"):  # '-…' would read as another option
            raise ValueError(f"ssh_options: the value of {flag} ({value!r}) is not a plain path, number or "
                             "KEY=VALUE")
        if flag == "-p" and not (digits(value) and 1 <= int(value) <= 65535):
            raise ValueError(f"ssh_options: -p needs a port from 1 to 65535, got {value!r}")
        if flag == "-i":
            value = _identity(value)
        out += [flag, value]
    return out


_REMOTE_FIO = re.compile(r"^[A-Za-z0-9_./+-]{1,256}$")


def check_remote_fio(value: Any) -> str:
    """The fio path on an ssh host: a path or a program name, nothing a remote shell would interpret."""
    if not isinstance(value, str) or not _REMOTE_FIO.match(value) or value.startswith("-"):
        raise ValueError(f"fio must be a path or program name (letters, digits, '/', '.', '_', '-'), "
                         f"got {value!r}")
    return value


def finite_number(value: float, field: str) -> float:
    """``value`` unless it is NaN or infinite."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{field} must be a finite number, got {value!r}")
    return value
