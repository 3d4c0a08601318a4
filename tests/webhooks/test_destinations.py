"""The SSRF guard as pure functions over every address form, and the resolution step with
a stub resolver (no test resolves a real name or sends a packet)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from app.webhooks.destinations import (
    DestinationRefused,
    DestinationUnresolved,
    address_refusal,
    check_destination,
    literal_address,
)

REFUSED = [
    "127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.0.1", "192.168.1.1",
    "169.254.169.254",  # link-local cloud metadata
    "100.64.0.1", "100.100.100.200",  # shared address space (one cloud's metadata)
    "0.0.0.0", "255.255.255.255", "240.0.0.1", "192.0.0.1", "192.0.2.1", "198.18.0.1",
    "224.0.0.1", "239.255.255.250",  # multicast
    "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "2001:db8::1",
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:100.64.0.1",  # IPv4-mapped
    "::127.0.0.1", "::10.0.0.1",  # IPv4-compatible
    "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1",  # NAT64
    "2002:7f00:1::", "2002:a9fe:a9fe::1",  # 6to4 of private addresses
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
]  # fmt: skip

ALLOWED = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]


@pytest.mark.parametrize("address", REFUSED)
def test_every_non_global_address_form_is_refused(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ALLOWED)
def test_global_unicast_addresses_are_allowed(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),  # decimal
        ("0x7f000001", "127.0.0.1"),  # hex
        ("0x7f.0.0.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),  # octal
        ("0177.0.0.01", "127.0.0.1"),
        ("127.1", "127.0.0.1"),  # short form
        ("169.254.43518", "169.254.169.254"),
        ("::ffff:7f00:1", "::ffff:7f00:1"),
        ("fe80::1%eth0", "fe80::1"),
    ],
)
def test_numbers_in_other_forms_are_read_as_a_resolver_reads_them(host: str, address: str) -> None:
    assert literal_address(host) == ipaddress.ip_address(address)
    assert address_refusal(ipaddress.ip_address(address)) is not None


def test_names_are_not_taken_for_numbers() -> None:
    for host in ("example.com", "hooks.internal", "0x7f.example", "1.2.3.4.example"):
        assert literal_address(host) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/hook",
        "http://0x7f.1/hook",
        "http://[::ffff:169.254.169.254]/latest",
        "https://100.64.0.1/hook",
        "http://[64:ff9b::a9fe:a9fe]/",
    ],
)
async def test_literal_urls_are_refused_without_resolving(url: str) -> None:
    async def never(host: str, port: int) -> list[str]:
        raise AssertionError("a literal address must not be resolved")

    with pytest.raises(DestinationRefused):
        await check_destination(url, allow_private=False, resolve=never)


@pytest.mark.parametrize("url", ["ftp://h/x", "file:///etc/passwd", "http:///x", "http://h:99999/"])
async def test_only_http_urls_with_a_host_and_port(url: str) -> None:
    with pytest.raises(DestinationRefused):
        await check_destination(url, allow_private=True)


async def test_a_name_is_refused_when_any_address_it_resolves_to_is_not_global() -> None:
    async def mixed(host: str, port: int) -> list[str]:
        assert (host, port) == ("hooks.example.test", 443)
        return ["93.184.216.34", "10.1.2.3"]

    with pytest.raises(DestinationRefused, match=r"10\.1\.2\.3"):
        await check_destination("https://hooks.example.test/h", allow_private=False, resolve=mixed)


async def test_the_addresses_checked_are_the_addresses_returned() -> None:
    async def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    destination = await check_destination(
        "http://hooks.example.test:8080/h", allow_private=False, resolve=public
    )
    assert destination.addresses == ("93.184.216.34",)
    assert (destination.host, destination.port) == ("hooks.example.test", 8080)


async def test_unknown_names_are_refused_and_transient_failures_are_not() -> None:
    async def unknown(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async def flaky(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    with pytest.raises(DestinationRefused, match="does not resolve"):
        await check_destination("http://nope.test/", allow_private=False, resolve=unknown)
    with pytest.raises(DestinationUnresolved):
        await check_destination("http://later.test/", allow_private=False, resolve=flaky)
