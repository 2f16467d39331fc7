"""The embedded lab: namespaces, switch, shaped links, a btrfs pool, iSCSI/NFS/NBD servers."""

from .lab import Endpoint, Lab, default_workdir
from .teardown import down_all

__all__ = ["Endpoint", "Lab", "default_workdir", "down_all"]
