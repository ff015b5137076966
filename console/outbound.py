"""Outbound requests fenced (issue 38): what the console sends to an address an admin typed, the
alert webhooks, reaches only the public internet, or what CLEANLINE_ALERT_ALLOWED_HOSTS lists.

A webhook's host is resolved once per send (`socket.getaddrinfo`), and the send is refused when
any address it resolves to is loopback, private, link-local, multicast, reserved, unspecified,
otherwise not global (100.64.0.0/10 and the like), or a cloud metadata address, unless the host
or the address is listed (a host name, an address or a network in CIDR, each with an optional
`:port`; `[v6]:port` for IPv6). IPv4 addresses carried in IPv6 ones (mapped, 6to4, Teredo,
NAT64) are checked as the IPv4 address they carry. The connection then goes to the address that
was checked, never to the name again, so a DNS answer that changes between the check and the
connection (rebinding) changes nothing; TLS still verifies the certificate against the name.
Redirects are never followed (a 3xx answer is a failure) and no proxy from the environment is
used. Every send checks again: a listing removed, or a name that now resolves elsewhere, is
refused at the next send. The URL is checked when an admin saves it too (the alert set-up).

What a caller learns is only sent, refused (with why the target is not allowed: a statement
about the target's address, which the admin typed) or failed: never the reason of a failure
(connection refused, a reset, the target's HTTP status), which would tell what listens on a
port. The reason goes to the server log.

E-mail has no target of this kind: recipients are addresses handed to the SMTP server, and that
server (EMAIL_HOST) is the operator's own configuration, trusted like the database's. A test
e-mail says sent or failed, its reason in the log as well."""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import re
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# The instance-metadata services of the clouds (AWS and most others, AWS over IPv6, Alibaba):
# reached only when listed by their own address, never through a wider network.
METADATA = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"))
NAT64 = ipaddress.ip_network("64:ff9b::/96")
SETTING = "CLEANLINE_ALERT_ALLOWED_HOSTS"
_HOST_NAME = re.compile(r"^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.?)+$", re.IGNORECASE)


class Refused(Exception):
    """The target is not allowed; the message says why, naming the host (never the URL: it is
    a secret to Slack and the like)."""


class Failed(Exception):
    """The target was allowed and the send did not succeed; the message is for the server log."""


@dataclass(frozen=True, slots=True)
class Allowed:
    """One entry of CLEANLINE_ALERT_ALLOWED_HOSTS: a host name or a network, and a port or any."""

    host: str | None
    network: IPNetwork | None
    port: int | None

    def covers(self, host: str, address: IPAddress, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host is not None:
            return self.host == host.lower().rstrip(".")
        assert self.network is not None
        if address in METADATA:  # only by its own address
            return self.network.num_addresses == 1 and address in self.network
        return address in self.network


def allowed_entry(item: str) -> Allowed:
    """One entry as written: `hooks.internal`, `hooks.internal:8443`, `10.0.0.5`, `10.0.0.0/8`,
    `10.0.0.0/8:443`, `fd00::/8`, `[fd00::1]:8443`. ValueError naming the entry."""
    text = item.strip()
    host, port = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError(f"{item!r}: expected [IPv6]:port")
        port = rest[1:]
    elif text.count(":") == 1:
        host, port = text.split(":")
    number: int | None = None
    if port or text.endswith(":"):
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{item!r}: the port is not a TCP port number (1-65535)")
        number = int(port)
    try:
        return Allowed(None, ipaddress.ip_network(host, strict=False), number)
    except ValueError:
        pass
    if "/" in host or ":" in host or not _HOST_NAME.match(host):
        raise ValueError(f"{item!r} is not a host name, an IP address or a network (CIDR), with an optional :port")
    return Allowed(host.lower().rstrip("."), None, number)


def allowed_hosts(items: list[str]) -> list[Allowed]:
    return [allowed_entry(item) for item in items if item.strip()]


def _carried(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo's client, NAT64), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def category(address: IPAddress) -> str | None:
    """What makes `address` one the console does not send to unless listed, or None (public)."""
    for checked in dict.fromkeys((_carried(address), address)):  # what it carries first: its truer name
        if checked in METADATA:
            return "a cloud metadata address"
        if checked.is_loopback:
            return "a loopback address"
        if checked.is_link_local:
            return "a link-local address"
        if checked.is_multicast:
            return "a multicast address"
        if checked.is_unspecified:
            return "an unspecified address"
        if checked.is_private:
            return "a private address"
        if checked.is_reserved:
            return "a reserved address"
        if not checked.is_global:
            return "an address that is not public"
    return None


@dataclass(frozen=True, slots=True)
class Target:
    """A webhook URL checked: where to connect (the addresses checked, tried in order), and what
    to ask for."""

    https: bool
    host: str
    port: int
    addresses: tuple[str, ...]
    path: str

    def connect(self, timeout: float | None) -> socket.socket:
        """A connection to the first checked address that answers (as socket.create_connection
        tries a name's addresses), never to the name again."""
        failure: OSError = OSError(f"{self.host}: no address")
        for address in self.addresses:
            try:
                return socket.create_connection((address, self.port), timeout)
            except OSError as exc:
                failure = exc
        raise failure


def target_of(url: str) -> Target:
    """Resolve and check `url`'s host (Refused: not http(s), or an address not allowed; Failed:
    the host does not resolve)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("a webhook is an http:// or https:// URL")
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise Refused(f"the port of {host} is not a TCP port number") from None
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Failed(f"{host} does not resolve: {exc}") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).partition("%")[0]) for info in found))
    allowed = allowed_hosts(list(getattr(settings, SETTING, [])))
    literal = _is_address(host)
    for address in addresses:
        why = category(address)
        if why is not None and not any(a.covers(host, address, port) for a in allowed):
            where = f"{host} is {why}" if literal else f"{host} resolves to {why}"
            logger.warning("webhook to %s refused: %s (%s) is %s", host, address, port, why)
            raise Refused(f"{where}, not listed in {SETTING}")
    if not addresses:
        raise Failed(f"{host} resolves to no address")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme == "https", host, port, tuple(str(a) for a in addresses), path)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def check(url: str) -> str | None:
    """Why `url` is refused now, or None (allowed, or its host does not resolve now: every send
    checks again)."""
    try:
        target_of(url)
    except Refused as exc:
        return str(exc)
    except Failed:
        return None
    return None


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """http.client's connection to the checked address (the Host header stays the name)."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.target = target

    def connect(self) -> None:
        self.sock = self.target.connect(self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """As _PinnedHTTPConnection, with TLS verified against the host name (SNI too)."""

    def __init__(self, target: Target, timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=timeout, context=self.tls)
        self.target = target

    def connect(self) -> None:
        self.sock = self.tls.wrap_socket(self.target.connect(self.timeout), server_hostname=self.host)


def post_json(url: str, payload: dict[str, Any]) -> None:
    """POST `payload` as JSON to a webhook, fenced: Refused (not allowed) or Failed (anything
    else, a 3xx included: redirects are not followed), else sent. No message names the URL."""
    target = target_of(url)
    connection: http.client.HTTPConnection = (
        _PinnedHTTPSConnection if target.https else _PinnedHTTPConnection)(
        target, settings.CLEANLINE_ALERT_WEBHOOK_TIMEOUT_SECONDS)
    try:
        connection.request("POST", target.path, body=json.dumps(payload).encode(),
                           headers={"Content-Type": "application/json", "User-Agent": "Cleanline"})
        response = connection.getresponse()
        response.read(1024)
    except (OSError, http.client.HTTPException) as exc:
        raise Failed(f"{target.host}: {type(exc).__name__}: {exc}") from None
    finally:
        connection.close()
    if not 200 <= response.status < 300:
        raise Failed(f"{target.host}: HTTP {response.status} {response.reason}")


def outcome_of(exc: BaseException) -> str:
    """What a caller (a page, the audit log) is told of a send that did not succeed: "refused:
    <why>" or "failed", never a failure's reason (it goes to the server log)."""
    return f"refused: {exc}" if isinstance(exc, Refused) else "failed"
