"""The load guest's iscsi_tcp, logged in by open-iscsi's iscsistart once per session the configuration asks for
(each session a SCSI disk), as its own initiator IQN, with the configuration's timeouts (plan.initiator_timeouts;
open-iscsi's defaults where it gives none); open-iscsi's iscsid then takes the sessions over, so that a lost
connection is logged in again. fio runs on the sessions' block devices."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ProtolabError
from ...lab.names import Names
from ...lab.servers.words import check_endpoint, check_iqn
from ...plan import attach
from ...plan.initiator_timeouts import IscsiTimeouts
from ...plan.model import Configuration
from ...plan.protocols import PROTOCOLS
from .initiator_adapter import Attachment, Initiator

PORT = PROTOCOLS["iscsi"].port


@dataclass(frozen=True)
class IscsiLogin:
    """A load guest's iSCSI logins: the portal, the target IQN, its own initiator IQN, how many sessions."""

    address: str
    port: int
    iqn: str
    initiator: str
    sessions: int = 1
    timeouts: IscsiTimeouts = IscsiTimeouts()

    def kernel_args(self) -> list[str]:
        """The load guest's kernel command line word (see scripts/build-guest.sh)."""
        check_endpoint(self.address, self.port)
        if not 1 <= self.sessions <= attach.MAX_SESSIONS:
            raise ProtolabError(f"iSCSI sessions {self.sessions}: give 1-{attach.MAX_SESSIONS}")
        check_iqn(self.iqn, "target IQN")
        check_iqn(self.initiator, "initiator IQN")
        t = self.timeouts.effective()
        return [f"pl.iscsi={self.address},{self.port},{self.iqn},{self.initiator},{self.sessions},"
                f"{t['replacement_timeout']},{t['noop_out_interval']},{t['noop_out_timeout']}"]


@dataclass(frozen=True)
class IscsiInitiator(Initiator):
    def identity(self, names: Names, host: int, vm: int, config: int, slot: int) -> str:
        return names.initiator_iqn(host, vm, config)

    def words(self, a: Attachment) -> list[str]:
        return IscsiLogin(a.address, PORT, a.target or "", a.identity, a.configuration.sessions or 1,
                          a.configuration.iscsi or IscsiTimeouts()).kernel_args()

    def label(self, c: Configuration, queues: int) -> str:
        return f"{c.sessions or 1} session(s), {(c.iscsi or IscsiTimeouts()).words()}"


INITIATOR = IscsiInitiator("iscsi")
