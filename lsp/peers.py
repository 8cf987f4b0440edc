"""Who is at the other end of a loopback TCP connection: `codectx lsp --tcp` serves its owner only.

Any local account can connect to a loopback port. Red team 4 connected to a user's `--tcp`
server as another account, named its own model server in `initializationOptions` (the user's
workspace went there) and read the user's conversations. Linux says who owns each socket in
/proc/net/tcp and /proc/net/tcp6: the client's socket is the established one whose local address
is the connection's peer address and whose remote address is ours (ports alone do not do: another
account could bind a port that one of the owner's own outgoing connections uses). Elsewhere the
owner cannot be told, and connections are refused (stdio, what editors use, is unaffected).
"""

from __future__ import annotations

import ipaddress
import os
import struct
from pathlib import Path

TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
ESTABLISHED = "01"

Address = tuple[str, int]  # (host, port) as asyncio's get_extra_info gives them


def proc_form(address: Address) -> set[str]:
    """How the kernel's tables write an address: `0100007F:0827` (IPv4, in host byte order), and
    for an IPv4 address also its IPv6-mapped form (a dual-stack socket's table is tcp6)."""
    host, port = address[0], address[1]
    ip = ipaddress.ip_address(host.split("%", 1)[0])
    forms = set()
    if ip.version == 4:
        forms.add(f"{struct.unpack('<I', ip.packed)[0]:08X}:{port:04X}")
        ip = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed)
    elif ip.ipv4_mapped is not None:
        forms |= proc_form((str(ip.ipv4_mapped), port))
    words = struct.unpack("<4I", ip.packed)
    forms.add("".join(f"{w:08X}" for w in words) + f":{port:04X}")
    return forms


def peer_uid(server: Address, peer: Address, tables: tuple[Path, ...] = TABLES) -> int | None:
    """The uid owning the established client socket from `peer` to `server`, or None."""
    local_forms, remote_forms = proc_form(peer), proc_form(server)
    for table in tables:
        try:
            lines = table.read_text(encoding="ascii", errors="replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8 or fields[3] != ESTABLISHED:
                continue
            if fields[1].upper() in local_forms and fields[2].upper() in remote_forms:
                try:
                    return int(fields[7])
                except ValueError:
                    return None
    return None


def refusal(server: Address, peer: Address, tables: tuple[Path, ...] = TABLES) -> str | None:
    """Why a connection is refused (its owner is another account, or cannot be told), or None."""
    try:
        uid = peer_uid(server, peer, tables)
    except ValueError:  # an address the tables cannot hold
        uid = None
    if uid is None:
        return "the connecting process's owner cannot be told on this system; use stdio"
    if uid != os.getuid():
        return f"the connecting process belongs to another account (uid {uid})"
    return None
