"""TCP ports of the local servers (twin, replay, Dagster UI): range and availability.

Checked before anything starts, so a busy or impossible port is one line naming the port, not
a server's traceback.
"""

from __future__ import annotations

import errno
import socket

import click

PORT = click.IntRange(0, 65535)
"""A ``--port`` value: 0 asks the system for a free port."""


def require_free_port(port: int, host: str = "127.0.0.1") -> None:
    """Fail with a clear message when ``host:port`` cannot be bound (0 always can).

    Raises:
        click.ClickException: The port is in use or not ours to bind.
    """
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                why = "is already in use by another program"
            else:
                why = f"cannot be used ({error.strerror})"
            raise click.ClickException(
                f"port {port} on {host} {why}; choose another one with --port (0 = any free port)"
            ) from None
