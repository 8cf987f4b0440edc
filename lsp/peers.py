"""Who is at the other end of a loopback TCP connection: `codectx lsp --tcp` serves its owner only.

Any local account can connect to a loopback port. Red team 4 connected to a user's `--tcp`
server as another account, named its own model server in `initializationOptions` (the user's
workspace went there) and read the user's conversations. Linux says who owns each socket in
/proc/net/tcp and /proc/net/tcp6: the client's socket is the one whose local port is the
connection's peer port and whose remote port is ours. Elsewhere the owner cannot be told, and
connections are refused (stdio, what editors use, is unaffected).
"""

from __future__ import annotations

import os
from pathlib import Path

TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


def peer_uid(server_port: int, peer_port: int, tables: tuple[Path, ...] = TABLES) -> int | None:
    """The uid owning the client socket (local port `peer_port`, remote port `server_port`)."""
    for table in tables:
        try:
            lines = table.read_text(encoding="ascii", errors="replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 8:
                continue
            local, remote = fields[1].rpartition(":")[2], fields[2].rpartition(":")[2]
            try:
                if int(local, 16) == peer_port and int(remote, 16) == server_port:
                    return int(fields[7])
            except ValueError:
                continue
    return None


def refusal(server_port: int, peer_port: int, tables: tuple[Path, ...] = TABLES) -> str | None:
    """Why a connection is refused (its owner is another account, or cannot be told), or None."""
    uid = peer_uid(server_port, peer_port, tables)
    if uid is None:
        return "the connecting process's owner cannot be told on this system; use stdio"
    if uid != os.getuid():
        return f"the connecting process belongs to another account (uid {uid})"
    return None
