"""Allow-lists of ``host:port`` pairs: what a proxy may connect to on the real network.

The check is on the name the client asked for, before any DNS lookup, so ``127.1`` or an IP
address of an allowed name is refused too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass(frozen=True)
class AllowList:
    """The ``(host, port)`` pairs a sandbox may reach.

    Attributes:
        pairs: Lower-case host names (IPv6 without brackets) with their port.
    """

    pairs: frozenset[tuple[str, int]] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """Read ``host:port``, ``host`` (ports 80 and 443) or ``http(s)://host[:port]`` entries.

        Raises:
            ValueError: An entry is empty, has a path, a wildcard or a bad port; the message
                quotes it.
        """
        pairs: set[tuple[str, int]] = set()
        for entry in entries:
            pairs.update(_parse_entry(entry))
        return cls(frozenset(pairs))

    def allows(self, host: str, port: int) -> bool:
        """Whether ``host:port`` is on the list (the host compared case-insensitively)."""
        return (normalise_host(host), port) in self.pairs

    def describe(self) -> str:
        """The list as ``host:port`` text, for error messages."""
        if not self.pairs:
            return "none"
        return ", ".join(format_hostport(host, port) for host, port in sorted(self.pairs))


def normalise_host(host: str) -> str:
    """Return ``host`` as compared: lower case, no brackets, no trailing dot."""
    return host.strip().strip("[]").rstrip(".").lower()


def format_hostport(host: str, port: int) -> str:
    """Return ``host:port`` (``[v6]:port`` for an IPv6 address)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _parse_entry(entry: str) -> list[tuple[str, int]]:
    text = entry.strip()
    if not text or "*" in text:
        raise ValueError(f"allowed host {entry!r}: expected host, host:port or a URL")
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"allowed host {entry!r}: only http(s) URLs are accepted")
        if parts.path not in ("", "/") or parts.query:
            raise ValueError(f"allowed host {entry!r}: a host is expected, not a path")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise ValueError(f"allowed host {entry!r}: bad port") from exc
        return [(normalise_host(parts.hostname), port)]
    if "/" in text:
        raise ValueError(f"allowed host {entry!r}: a host is expected, not a path")
    host, port_text = split_hostport(text)
    host = normalise_host(host)
    if not host:
        raise ValueError(f"allowed host {entry!r}: the host is empty")
    if port_text is None:
        return [(host, 80), (host, 443)]
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"allowed host {entry!r}: bad port {port_text!r}")
    return [(host, int(port_text))]


def split_hostport(text: str) -> tuple[str, str | None]:
    """Split ``host:port`` / ``[v6]:port`` / ``host`` into the host and the port text (or None)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, None  # a bare host, or a bare IPv6 address
