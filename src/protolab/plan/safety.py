"""What a plan may pass to fio and ssh: allow-lists, so a plan measures and does nothing else.

A plan's ``fio = {…}`` may only tune how an engine submits and completes I/O; every
option that names a file, runs a command, writes a log, changes the system or
changes the access spec is refused with the plan field to use instead. The same
for ``ssh_options``: only options that cannot run a command.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: fio options a plan may set (fio 3.33 HOWTO): submission/completion tuning, random
#: generator choice, and buffer contents. None of them names a path, runs anything or
#: changes what is accessed where.
ALLOWED_FIO: frozenset[str] = frozenset({
    # batching and queue refill
    "iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete", "iodepth_batch_complete_min",
    "iodepth_batch_complete_max", "iodepth_low", "io_submit_mode", "serialize_overlap",
    # io_uring / libaio / pvsync2 submission flags
    "hipri", "fixedbufs", "registerfiles", "sqthread_poll", "nonvectored", "force_async", "nowait",
    "userspace_reap",
    # the random offsets generator (not where or how much is accessed)
    "norandommap", "randrepeat", "random_generator", "randseed", "allrandrepeat",
    # buffer contents
    "refill_buffers", "scramble_buffers", "zero_buffers", "buffer_compress_percentage",
    "buffer_compress_chunk", "dedupe_percentage",
})

_USE_INSTEAD: dict[str, str] = {}
for _keys, _why in [
    (("rw", "readwrite", "rwmixread", "rwmixwrite", "percentage_random", "percentage_sequential",
      "random_distribution", "thinktime", "thinktime_blocks", "thinktime_spin"),
     "changes the access spec; set the workload's read_pct and random_pct"),
    (("bs", "blocksize", "bssplit", "bsrange", "blocksize_range", "ba", "blockalign", "bs_unaligned",
      "blocksize_unaligned"), "changes the access spec; set the workload's block_size"),
    (("iodepth",), "changes the access spec; set the workload's oio or the load point's oio"),
    (("numjobs",), "changes the load; set the load point's streams and hosts"),
    (("size", "filesize", "io_size", "io_limit", "offset", "offset_increment", "offset_align",
      "number_ios", "fill_device", "fill_fs"), "changes where I/O goes; set the target's size or method.data_size"),
    (("runtime", "time_based", "ramp_time", "startdelay", "loops"),
     "changes the measured window; set method.duration and method.warmup"),
    (("rate", "rate_iops", "rate_min", "rate_iops_min", "rate_process", "rate_cycle"),
     "changes the load; set the workload's rate_iops"),
    (("ioengine",), "set the configuration's ioengine"),
    (("direct", "buffered", "sync", "odirect"), "set the configuration's direct"),
    (("filename", "directory", "filename_format", "opendir", "unique_filename", "allow_file_create",
      "allow_mounted_write", "unlink", "unlink_each_loop", "create_on_open", "create_only", "create_serialize",
      "create_fsync", "pre_read", "nrfiles", "file_service_type", "openfiles", "lockfile", "nfs_url", "uri",
      "iomem", "mem", "verify_state_save", "verify_state_load", "trim_percentage", "exitall_on_error"),
     "names or creates files; set the configuration's target (protolab owns the files it writes)"),
    (("exec_prerun", "exec_postrun", "trigger", "trigger_cmd", "trigger_file", "trigger_timeout", "cmdprio",
      "exitall", "stonewall", "new_group", "wait_for", "ioscheduler", "cpus_allowed", "cpumask",
      "cpus_allowed_policy", "numa_cpu_nodes", "numa_mem_policy", "nice", "prio", "prioclass", "cgroup",
      "cgroup_weight", "cgroup_nodelete", "uid", "gid", "sqthread_poll_cpu", "invalidate", "fallocate",
      "flow_id", "thread", "daemonize", "kb_base", "unit_base"),
     "runs a command or changes the system; protolab does not let a plan do that"),
    (("write_iolog", "read_iolog", "iolog", "replay_redirect", "write_bw_log", "write_lat_log",
      "write_iops_log", "write_hist_log", "log_avg_msec", "log_hist_msec", "log_max_value", "log_offset",
      "log_compression", "log_store_compressed", "per_job_logs", "output", "write_barrier", "log_unix_epoch",
      "group_reporting", "unified_rw_reporting", "stats", "clat_percentiles", "lat_percentiles",
      "percentile_list", "disable_lat", "disable_clat", "disable_slat", "disable_bw_measurement", "gtod_reduce"),
     "writes a log or changes fio's output; protolab records what it measures itself"),
]:
    for _k in _keys:
        _USE_INSTEAD[_k] = _why

_FIO_VALUE = re.compile(r"^[A-Za-z0-9._:+-]{1,64}$")
_FIO_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def check_fio_options(options: Any) -> dict[str, Any]:
    """The plan's ``fio`` table if every option is allowed; ValueError naming the first that is not."""
    if not isinstance(options, dict):
        raise ValueError("expected a table of fio options, e.g. fio = { iodepth_batch_submit = 8 }")
    for key, value in options.items():
        if not isinstance(key, str) or not _FIO_KEY.match(key):
            raise ValueError(f"{key!r} is not a fio option name; allowed: {', '.join(sorted(ALLOWED_FIO))}")
        if key in _USE_INSTEAD:
            raise ValueError(f"fio option {key!r} is not allowed: it {_USE_INSTEAD[key]}")
        if key not in ALLOWED_FIO:
            raise ValueError(f"fio option {key!r} is not allowed; a plan may set only "
                             f"{', '.join(sorted(ALLOWED_FIO))}")
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            if not 0 <= value <= 2**32:
                raise ValueError(f"fio option {key!r}: {value} is out of range (0 to 2^32)")
            continue
        if isinstance(value, float):
            if not math.isfinite(value) or not 0 <= value <= 2**32:
                raise ValueError(f"fio option {key!r}: {value!r} is out of range (0 to 2^32)")
            continue
        if isinstance(value, str):
            if not _FIO_VALUE.match(value):
                raise ValueError(f"fio option {key!r}: value {value!r} must be 1 to 64 letters, digits "
                                 "or . _ : + -")
            continue
        raise ValueError(f"fio option {key!r}: value must be a number, true/false or a short word, "
                         f"not {type(value).__name__}")
    return options


#: fio I/O engines a plan may choose for a local target: they read and write the target
#: and nothing else (never external:, exec, filedelete, net, sg, …).
LOCAL_ENGINES = ("io_uring", "libaio", "psync", "pvsync", "pvsync2", "sync", "vsync", "posixaio", "mmap", "null")

#: ssh ``-o`` keys a plan may set: none of them runs a command or writes a file of its choosing.
ALLOWED_SSH_KEYS = frozenset(k.lower() for k in (
    "AddressFamily", "BatchMode", "CheckHostIP", "Ciphers", "Compression", "ConnectionAttempts",
    "ConnectTimeout", "GlobalKnownHostsFile", "HostKeyAlgorithms", "HostKeyAlias", "IdentitiesOnly",
    "IdentityFile", "IPQoS", "KexAlgorithms", "LogLevel", "MACs", "PasswordAuthentication",
    "PreferredAuthentications", "PubkeyAcceptedAlgorithms", "PubkeyAcceptedKeyTypes", "PubkeyAuthentication",
    "Port", "ServerAliveCountMax", "ServerAliveInterval", "StrictHostKeyChecking", "TCPKeepAlive", "User",
    "UserKnownHostsFile", "UpdateHostKeys", "KbdInteractiveAuthentication",
))
_SSH_WITH_VALUE = {"-F", "-i", "-p", "-o", "-l"}
_SSH_FLAGS = {"-4", "-6", "-q", "-v", "-C", "-T"}
_SSH_KEY = re.compile(r"^\s*([A-Za-z]+)\s*(=|\s)\s*(.*)$", re.DOTALL)


def _plain(text: str, what: str) -> None:
    if not text or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise ValueError(f"{what} must be non-empty, without control characters (got {text!r})")


def check_ssh_options(options: Any) -> list[str]:
    """``ssh_options`` if only -F, -i, -p, -l, -o KEY=VALUE with a safe key and a few flags; else ValueError."""
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ValueError("ssh_options must be a list of strings, e.g. ['-F', '/root/.ssh/lab_config']")
    i = 0
    while i < len(options):
        opt = options[i]
        _plain(opt, "an ssh option")
        if opt in _SSH_FLAGS:
            i += 1
            continue
        flag, value = (opt[:2], opt[2:]) if opt[:2] in _SSH_WITH_VALUE and len(opt) > 2 else (opt, None)
        if flag not in _SSH_WITH_VALUE:
            raise ValueError(f"ssh option {opt!r} is not allowed; use only -F FILE, -i KEY, -p PORT, -l USER, "
                             f"-o KEY=VALUE or {' '.join(sorted(_SSH_FLAGS))}")
        if value is None:
            if i + 1 >= len(options):
                raise ValueError(f"ssh option {opt} needs a value after it")
            value = options[i + 1]
            i += 2
        else:
            i += 1
        _plain(value, f"the value of ssh option {flag}")
        if value.startswith("-"):
            raise ValueError(f"ssh option {flag}: value {value!r} starts with '-'")
        if flag == "-p" and not (value.isdigit() and 1 <= int(value) <= 65535):
            raise ValueError(f"ssh option -p: {value!r} is not a port (1-65535)")
        if flag == "-o":
            m = _SSH_KEY.match(value)
            key = m.group(1) if m else value
            if key.lower() not in ALLOWED_SSH_KEYS:
                raise ValueError(f"ssh option -o {key}: not allowed (it can run a command or is not known to be "
                                 "safe); use keys such as User, Port, IdentityFile, StrictHostKeyChecking, "
                                 "UserKnownHostsFile, ConnectTimeout (README: Real infrastructure lists them)")
    return options
