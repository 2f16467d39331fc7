"""The SMB wire model: the messages one I/O puts on TCP as SMB2/SMB3 READs and WRITEs (analysis.wire cuts them into
segments and ACKs).

Its entries in analysis.wire's MODELS are ``"smb": _over_tcp(smb_bursts)`` and, for a server slower than 500 µs
(a device model's: see ``interim``), ``"smb-slow": _over_tcp(smb_bursts_slow)``: like the other TCP models, a list of
(direction, bytes) bursts per I/O, each a message the sender writes at once, TCP's segments and Linux's pure ACKs
counted by wire's ``_tcp`` (MSS = MTU - 52; pure ACKs as captured, RFC 1122's bound for the range).

Sources ([MS-SMB2] is Microsoft's Server Message Block Protocol Versions 2 and 3 specification):
- Transport (2.1): SMB2 directly over TCP, port 445; every message is prefixed with a 4 B header, a zero byte and
  a 24-bit length (the NetBIOS session message header's form, RFC 1002 4.3.1, without NetBIOS).
- SMB2 header (2.2.1): 64 B; the credits a request asks for and a response grants ride in it, and so does the
  16 B signature when a session signs (no bytes added).
- READ request (2.2.19): StructureSize 49, 48 B of fields and a Buffer of at least one byte; Linux's cifs sends
  all 49 (fs/smb/client: smb2_new_read_req, the request's whole structure). READ response (2.2.20): StructureSize
  17, 16 B of fields and the data at DataOffset 80 (header 64 + 16): 16 B + data, no padding (Samba).
- WRITE request (2.2.21): StructureSize 49, the data at DataOffset 112 (64 + 48): 48 B + data (Linux leaves out
  the Buffer byte). WRITE response (2.2.22): StructureSize 17, 16 B of fields, no Buffer byte (Samba).
- Sizes: an I/O larger than the negotiated MaxReadSize / MaxWriteSize is several requests. Samba offers 8 MiB;
  Linux's cifs asks for rsize = wsize = 4 MiB with SMB3 unless mounted with others (SMB_MAX_IO), so below 4 MiB
  one I/O is one READ or WRITE.
- Credits (3.2.4.1.5, 3.3.5.2.5): a request of n bytes charges ceil(n / 64 KiB) credits (CreditCharge) of those
  granted in earlier responses' headers. Samba grants up to 8192 (smb2 max credits) and Linux's cifs asks for more
  in every request, so credits bound how much is in flight (8192 × 64 KiB) but add no message and no byte here.
- Interim responses (3.3.4.2): a server that has not answered a request within its own time sends an interim
  response (STATUS_PENDING: the header and the 9 B ERROR body, 2.2.2) and the real one later. Samba does so for a
  READ or WRITE its thread pool has not finished within 500 µs (smbd_smb2_request_pending_queue(…, 500)): over a
  device model slower than that, every request has one (``interim``: one more message to the host, 77 B); over
  the RAM pool, a few in a hundred on a busy machine.
- No encryption: Samba offers it but does not require it and Linux's cifs encrypts only when mounted with seal
  (each message would gain a 52 B SMB2 TRANSFORM_HEADER, 2.2.41); signing adds no byte. No compounding: Linux's
  cifs sends each READ and WRITE on its own; SMB2 ECHOs (one a minute) are not counted.
- Delayed ACKs: as for the other protocols (analysis.wire_tcp.pure_acks): Linux's cifs leaves Nagle on unless mounted
  with sockopt=TCP_NODELAY, which holds no message back when one I/O is in flight; deeper queues merge more.
"""

from __future__ import annotations

import math

#: analysis.wire's directions: to storage (requests, write data), to host (responses, read data)
TO_STORAGE, TO_HOST = 0, 1
SMB_TRANSPORT_HEADER = 4
SMB2_HEADER = 64
SMB2_READ_REQUEST, SMB2_READ_RESPONSE = 49, 16
SMB2_WRITE_REQUEST, SMB2_WRITE_RESPONSE = 48, 16
SMB2_ERROR_RESPONSE = 9  # an interim response's body (STATUS_PENDING)
SMB2_TRANSFORM_HEADER = 52  # encryption only (seal): not in the messages below
#: Samba sends an interim response for a READ or WRITE not done within this long (µs)
SAMBA_INTERIM_US = 500
SMB_MAX_IO = 4 << 20  # Linux cifs's rsize and wsize with SMB3 (Samba offers 8 MiB)
CREDIT_BYTES = 65536


def message(body: int) -> int:
    """Bytes of one SMB2 message on TCP: the transport header, the SMB2 header and ``body``."""
    return SMB_TRANSPORT_HEADER + SMB2_HEADER + body


def credit_charge(size: int) -> int:
    """The credits one READ or WRITE of ``size`` bytes charges ([MS-SMB2] 3.1.5.2: one per 64 KiB, at least one)."""
    return max(1, math.ceil(size / CREDIT_BYTES))


def requests(size: int, max_io: int = SMB_MAX_IO) -> list[int]:
    """The READ or WRITE requests one I/O of ``size`` bytes becomes: its bytes cut at ``max_io``."""
    return [min(max_io, size - offset) for offset in range(0, size, max_io)]


def interim(server_us: float) -> bool:
    """Whether Samba sends an interim response before answering a READ or WRITE that takes ``server_us`` (the
    device model's service time, or its write-back cache's acknowledgement time for writes)."""
    return server_us > SAMBA_INTERIM_US


def smb_bursts(size: int, read: bool, max_io: int = SMB_MAX_IO, interim: bool = False) -> list[tuple[int, int]]:
    """(direction, TCP payload bytes) of each message one I/O of ``size`` bytes puts on the wire, request and
    response for each piece of at most ``max_io`` bytes; ``interim``: with an interim response before each
    response (a server slower than SAMBA_INTERIM_US)."""
    bursts = []
    pending = [(TO_HOST, message(SMB2_ERROR_RESPONSE))] if interim else []
    for chunk in requests(size, max_io):
        if read:
            bursts += [(TO_STORAGE, message(SMB2_READ_REQUEST)), *pending,
                       (TO_HOST, message(SMB2_READ_RESPONSE) + chunk)]
        else:
            bursts += [(TO_STORAGE, message(SMB2_WRITE_REQUEST) + chunk), *pending,
                       (TO_HOST, message(SMB2_WRITE_RESPONSE))]
    return bursts


def smb_bursts_slow(size: int, read: bool) -> list[tuple[int, int]]:
    """smb_bursts of a server slower than SAMBA_INTERIM_US (a device model's): an interim response each."""
    return smb_bursts(size, read, interim=True)
