"""Listening sockets, optionally shared by several proxy processes (`socket.reuse.port`).

One proxy process runs one trio event loop and so uses about one core. With
SO_REUSEPORT, several proxy processes on one host bind the same listener ports and
the kernel spreads new connections across them (by a hash of each connection's
addresses), so one advertised address uses every core. Linux lets only processes
of the same user join a port this way. Without the option, a second process on a
port fails at startup with "address already in use", as before.
"""

import errno
import socket

import trio

# As trio.open_tcp_listeners: ask for the most and let the kernel cap it (net.core.somaxconn), where
# socket.SOMAXCONN is a constant from the headers Python was built with.
_BACKLOG = 0xFFFF
# Families a host may lack (no IPv6): skipped, as trio.open_tcp_listeners skips them.
_MISSING_FAMILY = (errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT)


async def open_listeners(host: str | None, port: int, *, reuse_port: bool) -> list[trio.SocketListener]:
    """Bound and listening TCP sockets for `host` (None: every address) and `port` (0: any free port).

    A failure names the address: "address already in use" alone does not say which of the listeners it is.
    """
    try:
        return await _open_listeners(host, port, reuse_port=reuse_port)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot listen on {host or '*'}:{port}: {exc.strerror or exc}") from exc


async def _open_listeners(host: str | None, port: int, *, reuse_port: bool) -> list[trio.SocketListener]:
    if not reuse_port:
        return await trio.open_tcp_listeners(port, host=host)
    found = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    addresses = list(dict.fromkeys((family, address) for family, _, _, _, address in found))
    listeners: list[trio.SocketListener] = []
    try:
        for family, address in addresses:
            try:
                sock = trio.socket.socket(family, socket.SOCK_STREAM)
            except OSError as exc:
                if exc.errno in _MISSING_FAMILY:
                    continue
                raise
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # the IPv4 address gets its own socket
                await sock.bind(address)
                sock.listen(_BACKLOG)
            except BaseException:
                sock.close()
                raise
            listeners.append(trio.SocketListener(sock))
    except BaseException:
        for listener in listeners:
            listener.socket.close()
        raise
    if not listeners:
        raise OSError(errno.EADDRNOTAVAIL, f"no address to listen on for {host or '*'}:{port}")
    return listeners


__all__ = ["open_listeners"]
