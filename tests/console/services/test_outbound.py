"""Outbound requests fenced (console/outbound.py, issue 38): alert webhooks reach only public
addresses or what CLEANLINE_ALERT_ALLOWED_HOSTS lists, checked after name resolution when saved
and at every send; redirects are not followed; "send a test" says sent, refused (why) or failed,
never what listens where. Real HTTP servers on 127.0.0.1 (`sinks`, `odd_receiver`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.urls import reverse

from console import outbound
from console.alerts import deliver
from console.models import Alert, AlertKind, AuditEvent
from console.models_alerts import AlertChannel
from tests.console.helpers import Sinks, login
from tests.helpers import free_port

pytestmark = pytest.mark.django_db

TEST = reverse("console:alert_channel_test")
ADD = reverse("console:alert_channel_add")
NOT_LISTED = "not listed in CLEANLINE_ALERT_ALLOWED_HOSTS"


def message_after_test(admin: object, key: str) -> str:
    """The page's message after "send a test" to the channel `key`."""
    page = admin.post(TEST, {"channel": key}, follow=True).content.decode()  # type: ignore[attr-defined]
    start = page.index("The test to") if "The test to" in page else page.index("A test was sent")
    return page[start:page.index("<", start)]


def test_outbound_loopback_private_and_metadata_targets_are_refused(sinks: Sinks, settings) -> None:
    admin = login("admin")
    receiver = settings.CLEANLINE_ALERT_WEBHOOKS[0]
    port = int(receiver.split(":")[2].split("/")[0])
    assert message_after_test(admin, "settings:webhook:1") == "A test was sent to webhook 127.0.0.1."  # listed: sent
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = [f"127.0.0.1:{port + 1}", "localhost"]  # another port, a name
    assert message_after_test(admin, "settings:webhook:1") == (
        f"The test to webhook 127.0.0.1 was refused: 127.0.0.1 is a loopback address, {NOT_LISTED}.")
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = []
    assert len(sinks.hooks) == 1  # the receiver got the first test only

    refused = {
        f"http://localhost:{port}/hook": "localhost resolves to a loopback address",  # after name resolution
        f"http://[::ffff:127.0.0.1]:{port}/hook": "::ffff:127.0.0.1 is a loopback address",
        f"http://0.0.0.0:{port}/": "0.0.0.0 is an unspecified address",
        "http://10.20.30.40/hook": "10.20.30.40 is a private address",
        "https://172.16.5.4/hook": "172.16.5.4 is a private address",
        "http://192.168.1.10:8080/hook": "192.168.1.10 is a private address",
        "http://[fd12:3456::1]/hook": "fd12:3456::1 is a private address",
        "http://169.254.10.10/": "169.254.10.10 is a link-local address",
        "http://169.254.169.254/latest/meta-data/": "169.254.169.254 is a cloud metadata address",
        "http://[fd00:ec2::254]/latest/": "fd00:ec2::254 is a cloud metadata address",
        "http://100.100.100.200/latest/meta-data/": "100.100.100.200 is a cloud metadata address",
        "http://100.64.0.1/": "100.64.0.1 is an address that is not public",
        "http://224.0.0.1/": "224.0.0.1 is a multicast address",
    }
    for url, why in refused.items():
        page = admin.post(ADD, {"kind": "webhook", "target": url}, follow=True).content.decode()
        assert f"Refused: {why}, {NOT_LISTED}." in page, url
        assert outbound.check(url) == f"{why}, {NOT_LISTED}"
    assert not AlertChannel.objects.exists()

    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = ["10.0.0.0/8", "169.254.0.0/16", "[fd00::/8]:443"]
    assert outbound.check("http://10.20.30.40/hook") is None  # a listed network
    assert outbound.check("https://[fd12:3456::1]/hook") is None and outbound.check("http://[fd12:3456::1]/")
    assert outbound.check("http://169.254.10.10/") is None
    assert outbound.check("http://169.254.169.254/") == f"169.254.169.254 is a cloud metadata address, {NOT_LISTED}"
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = ["169.254.169.254"]  # only by its own address
    assert outbound.check("http://169.254.169.254/") is None


def test_outbound_redirects_are_not_followed(sinks: Sinks, odd_receiver: tuple[str, list[str]], settings) -> None:
    base, asked = odd_receiver
    odd_port = base.rsplit(":", 1)[1]
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = [*settings.CLEANLINE_ALERT_ALLOWED_HOSTS, f"127.0.0.1:{odd_port}"]
    admin = login("admin")
    sink = settings.CLEANLINE_ALERT_WEBHOOKS[0]  # another local port, listed: a redirect would reach it
    paths = [f"/302?to={quote(sink)}", f"/302?to={quote(base)}/200", f"/307?to={quote(base)}/200",
             f"/308?to={quote(sink)}", f"/303?to={quote(base)}/200", "/303?to=ftp://127.0.0.1/x"]
    for path in paths:
        admin.post(ADD, {"kind": "webhook", "target": base + path})
    for row in AlertChannel.objects.order_by("pk"):
        assert message_after_test(admin, f"console:{row.pk}") == "The test to webhook 127.0.0.1 failed."
    assert asked == [f"POST {path}" for path in paths] and not sinks.hooks  # never followed


def test_outbound_a_failed_test_tells_nothing_of_what_listens(odd_receiver: tuple[str, list[str]], settings) -> None:
    base, asked = odd_receiver
    closed = free_port()  # nothing listens there: "connection refused" if it were told
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = [f"127.0.0.1:{base.rsplit(':', 1)[1]}", f"127.0.0.1:{closed}"]
    admin = login("admin")
    for url in (f"http://127.0.0.1:{closed}/hook", f"{base}/401", f"{base}/hangup", f"{base}/500"):
        admin.post(ADD, {"kind": "webhook", "target": url})
    for row in AlertChannel.objects.order_by("pk"):
        assert message_after_test(admin, f"console:{row.pk}") == "The test to webhook 127.0.0.1 failed."
    assert len(asked) == 3  # the three servers were reached, and their answers not told
    results = set(AuditEvent.objects.filter(action="alert.channel.tested").values_list("result", flat=True))
    assert results == {"failed"}


def test_outbound_every_send_checks_again(console_table, sinks: Sinks, settings) -> None:
    """A webhook saved while listed is refused at the next delivery once the listing is gone;
    the alert records "refused" with why, and the receiver gets nothing."""
    admin = login("admin")
    url = settings.CLEANLINE_ALERT_WEBHOOKS[0].replace("/T000/", "/console/")
    admin.post(ADD, {"kind": "webhook", "target": url})
    row = AlertChannel.objects.get()
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = []
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    alert = Alert.objects.create(table=table, kind=AlertKind.PLAN_STALE, key="plan:1", message="a test alert")
    deliveries = deliver(alert)
    assert deliveries[f"webhook #{row.pk} (127.0.0.1)"]["error"] == (
        f"refused: 127.0.0.1 is a loopback address, {NOT_LISTED}")
    assert not sinks.hooks


@pytest.mark.parametrize(("entry", "covers"), [
    ("hooks.internal", ("hooks.internal", "10.0.0.1", 443)),
    ("Hooks.Internal.:8443", ("hooks.internal", "10.0.0.1", 8443)),
    ("10.0.0.0/8:443", ("x", "10.9.9.9", 443)),
    ("[::1]:8080", ("x", "::1", 8080)),
    ("fd00::/8", ("x", "fd00::5", 1)),
])
def test_outbound_allowed_entries_parse(entry: str, covers: tuple[str, str, int]) -> None:
    import ipaddress

    host, address, port = covers
    allowed = outbound.allowed_entry(entry)
    assert allowed.covers(host, ipaddress.ip_address(address), port)
    assert not allowed.covers("other.host", ipaddress.ip_address("10.255.255.254" if ":" not in address else "fc00::1"),
                              port + 1)


@pytest.mark.parametrize("entry", ["http://x", "10.0.0.0/8:0", "host:port", "[::1]x", "a/b", "host:"])
def test_outbound_allowed_entries_refuse_what_they_cannot_read(entry: str) -> None:
    with pytest.raises(ValueError, match="port|host name"):
        outbound.allowed_entry(entry)


def test_outbound_https_goes_to_the_checked_address_and_verifies_the_name(
        tls_receiver: tuple[int, Path, list[dict[str, Any]]], settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTPS through the fence: connected to the address `localhost` was checked at, the
    certificate verified against the name (trusted here through SSL_CERT_FILE); the same server
    by its address, which its certificate does not name, fails; untrusted, it fails too."""
    port, cert, got = tls_receiver
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = [f"localhost:{port}", f"127.0.0.1:{port}"]
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    outbound.post_json(f"https://localhost:{port}/hook", {"text": "over TLS"})
    assert got == [{"text": "over TLS"}]
    with pytest.raises(outbound.Failed, match="CERTIFICATE_VERIFY_FAILED|match"):
        outbound.post_json(f"https://127.0.0.1:{port}/hook", {"text": "by address"})
    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(outbound.Failed, match="CERTIFICATE_VERIFY_FAILED"):
        outbound.post_json(f"https://localhost:{port}/hook", {"text": "untrusted"})
    assert len(got) == 1


def test_outbound_connects_to_the_checked_address_never_the_name_again(odd_receiver: tuple[str, list[str]]) -> None:
    """A checked target connects to its addresses (the first that answers), not to its name: a
    name that no longer resolves, or resolves elsewhere (DNS rebinding), changes nothing."""
    base, _ = odd_receiver
    port = int(base.rsplit(":", 1)[1])
    closed = free_port()
    target = outbound.Target(False, "rebound.invalid", port, ("127.0.0.1",), "/200")
    with target.connect(5) as sock:
        assert sock.getpeername() == ("127.0.0.1", port)
    with pytest.raises(ConnectionRefusedError):
        outbound.Target(False, "rebound.invalid", closed, ("127.0.0.1",), "/").connect(5)
