"""Where webhooks may go: the SSRF guard, applied when a run is created (a refusal is a
422 then, not a delivery that fails for a week) and again for every delivery.

The rule: an `http(s)` URL whose host is, or resolves only to, global unicast addresses
(`ip.is_global`, not multicast). Every other address is refused unless the deployment
sets `AGENTRUN_WEBHOOK_ALLOW_PRIVATE`: loopback, private, link-local, shared address
space (100.64.0.0/10, where cloud metadata services live too), reserved, unspecified,
and IPv6 addresses that embed such an IPv4 address (IPv4-mapped and -compatible, 6to4,
Teredo, NAT64). A host written as a number in another form (`2130706433`, `0x7f.1`,
`017700000001`, `127.1`) is read the way a resolver would read it.

A delivery connects to the address that was checked (the URL's host is replaced by it,
with the name kept in `Host` and in TLS SNI and certificate checks), so a name that
resolves to another address the second time (DNS rebinding) cannot redirect it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: host, port -> the addresses it resolves to (injected by tests: no test resolves a name
#: to anything but loopback).
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
#: getaddrinfo errors that mean "this name does not exist" (others may be transient).
_NO_SUCH_NAME = {getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, n)}


class DestinationRefused(Exception):
    """The URL may not be called; the message says why."""


class DestinationUnresolved(Exception):
    """The host could not be resolved now (may be transient)."""


@dataclass(frozen=True, slots=True)
class Destination:
    url: str
    host: str
    port: int
    addresses: tuple[str, ...]  # what to connect to, each checked


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def literal_address(host: str) -> IPAddress | None:
    """`host` as an IP address if it is one, in any form a resolver accepts."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if not host or not all(c.isalnum() or c == "." for c in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))  # decimal, hex, octal, 127.1
    except OSError:
        return None


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries, for the forms that reach it."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if int(ip) >> 32 == 0 and int(ip) > 1:  # IPv4-compatible ::a.b.c.d (not :: or ::1)
        return ipaddress.IPv4Address(int(ip))
    return None


def address_refusal(ip: IPAddress) -> str | None:
    """Why `ip` is not a webhook destination (None when it is: global unicast)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            why = address_refusal(inner)
            if why is not None:
                return f"{ip} embeds {why}"
    if ip.is_multicast:
        return f"{ip} is a multicast address"
    if not ip.is_global:
        return f"{ip} is not a global address"
    return None


def _parts(url: str) -> tuple[str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise DestinationRefused(f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DestinationRefused("only http and https URLs with a host")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


async def check_destination(
    url: str, *, allow_private: bool, resolve: Resolver = system_resolver
) -> Destination:
    """The checked destination of `url`, or `DestinationRefused` / `DestinationUnresolved`.
    With `allow_private` every address is allowed, but the host is still resolved once
    here and only the addresses found are connected to."""
    host, port = _parts(url)
    literal = literal_address(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = await resolve(host, port)
        except socket.gaierror as exc:
            if exc.errno in _NO_SUCH_NAME:
                raise DestinationRefused(f"{host} does not resolve") from None
            raise DestinationUnresolved(f"cannot resolve {host} now: {exc}") from None
        except OSError as exc:
            raise DestinationUnresolved(f"cannot resolve {host} now: {exc}") from None
        if not addresses:
            raise DestinationRefused(f"{host} does not resolve")
    if not allow_private:
        for address in addresses:
            why = address_refusal(ipaddress.ip_address(address.split("%", 1)[0]))
            if why is not None:
                raise DestinationRefused(
                    f"{host} resolves to {why}; private, loopback, link-local and shared "
                    "addresses need AGENTRUN_WEBHOOK_ALLOW_PRIVATE=true"
                    if literal is None
                    else f"{why}; private, loopback, link-local and shared addresses need "
                    "AGENTRUN_WEBHOOK_ALLOW_PRIVATE=true"
                )
    return Destination(url, host, port, tuple(addresses))
