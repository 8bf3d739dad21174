"""Whether this machine can listen on a TCP address, found with a plain socket before a server
tries: gRPC refuses after a C-core log line on stderr and with advice to set GRPC_VERBOSITY,
waitress with "Invalid host/port specified.", where the system's reason ("Address already in
use", "Name or service not known") and what to do about it say it all."""

from __future__ import annotations

import errno
import socket

# What to do about an address the system will not let a server listen on, by its errno.
_ADVICE = {
    errno.EADDRINUSE: "another {server} there? choose another port with --listen",
    errno.EACCES: "ports below 1024 need root: choose another with --listen",
    errno.EADDRNOTAVAIL: "not an address of this machine: choose one with --listen",
}


def check_listenable(address: str, server: str) -> None:
    """An OSError saying why `server` (its kind, for the advice) cannot listen on HOST:PORT; a
    unix: address or a malformed one is left to the server."""
    host, _, port = address.rpartition(":")
    if address.startswith("unix:") or not port.isdigit():
        return
    try:
        found = socket.getaddrinfo(
            host.strip("[]") or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise OSError(
            f"cannot listen on {address}: the host name {host!r} is not known "
            f"({exc.strerror}); give an address of this machine with --listen, e.g. "
            f"127.0.0.1:{port}"
        ) from None
    if int(port) == 0:
        return  # any free port: nothing to probe
    for family, kind, proto, _, sockaddr in found:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
            try:
                probe.bind(sockaddr)
            except OSError as exc:
                advice = _ADVICE.get(exc.errno or 0, "choose another with --listen")
                raise OSError(
                    f"cannot listen on {address}: {exc.strerror} ({advice.format(server=server)})"
                ) from None
