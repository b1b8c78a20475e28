"""The twin's HTTP APIs: main API (v1/v2), Tabular, Metrics and crawler routes, and MCP.

``app.create_app`` serves a catalogue; ``server.TwinServer`` runs it on 127.0.0.1;
``front.twin_front`` puts it behind the hostname front under production host names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.api.app import TwinConfig
    from datagouv_eval_pipeline.world.api.front import (
        FrontNotRunningError,
        forget_running,
        record_running,
        running_env,
        served_by,
        twin_front,
    )
    from datagouv_eval_pipeline.world.api.hosts import served_hosts
    from datagouv_eval_pipeline.world.api.server import TwinServer, serve_forever

_MODULE_OF: dict[str, str] = {
    "FrontNotRunningError": ".front",
    "TwinConfig": ".app",
    "TwinServer": ".server",
    "forget_running": ".front",
    "record_running": ".front",
    "running_env": ".front",
    "serve_forever": ".server",
    "served_by": ".front",
    "served_hosts": ".hosts",
    "twin_front": ".front",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "FrontNotRunningError",
    "TwinConfig",
    "TwinServer",
    "forget_running",
    "record_running",
    "running_env",
    "serve_forever",
    "served_by",
    "served_hosts",
    "twin_front",
]
