"""Parse an OpenAPI/Swagger document and summarise it for ``get_dataservice_openapi_spec``.

Reference §1.4: JSON is tried first, then YAML; the summary gives the API title, version and
description (300 chars), up to 3 servers, the Swagger 2 base URL, then every path with its
methods, the first line of summary or description (120 chars) and the parameters. Response
schemas are skipped.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

HTTP_METHODS = ("get", "post", "put", "patch", "delete", "head", "options", "trace")


def parse_spec(text: str, url: str) -> dict[str, Any]:
    """Parse JSON, then YAML.

    Raises:
        ValueError: neither gives a mapping (the real server's message).
    """
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        try:
            parsed = yaml.safe_load(text)
        except yaml.YAMLError:
            parsed = None
    if not isinstance(parsed, dict):
        raise ValueError(f"Could not parse OpenAPI spec from {url} as JSON or YAML")
    return parsed


def _first_line(text: Any, limit: int = 120) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0][:limit] if lines else ""


def _param_line(param: dict[str, Any]) -> str:
    schema = param.get("schema") if isinstance(param.get("schema"), dict) else {}
    kind = (schema or {}).get("type") or param.get("type") or "any"
    required = " (required)" if param.get("required") else ""
    return f"      - {param.get('name', '?')} [{param.get('in', '?')}, {kind}]{required}"


def summarise(spec: dict[str, Any]) -> list[str]:
    """Return the summary lines that follow the tool's header."""
    lines: list[str] = []
    info = spec.get("info") if isinstance(spec.get("info"), dict) else {}
    info = info or {}
    lines.append(f"API: {info.get('title', 'Unknown')}")
    if info.get("version"):
        lines.append(f"Version: {info['version']}")
    if info.get("description"):
        lines.append(f"Description: {str(info['description'])[:300]}...")
    servers = [s for s in spec.get("servers") or [] if isinstance(s, dict) and s.get("url")]
    if servers:
        lines.append("")
        lines.append("Servers:")
        lines.extend(f"  - {s['url']}" for s in servers[:3])
    if spec.get("swagger") and spec.get("host"):
        schemes = spec.get("schemes") or ["https"]
        lines.append("")
        lines.append(f"Base URL: {schemes[0]}://{spec['host']}{spec.get('basePath', '')}")
    paths = spec.get("paths") if isinstance(spec.get("paths"), dict) else {}
    paths = paths or {}
    lines.append("")
    lines.append(f"Endpoints ({len(paths)} paths):")
    for path, item in paths.items():
        if not isinstance(item, dict):
            continue
        shared = [p for p in item.get("parameters") or [] if isinstance(p, dict)]
        for method in HTTP_METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            lines.append(f"  {method.upper()} {path}")
            summary = _first_line(operation.get("summary") or operation.get("description"))
            if summary:
                lines.append(f"    {summary}")
            own = [p for p in operation.get("parameters") or [] if isinstance(p, dict)]
            lines.extend(_param_line(p) for p in shared + own)
    return lines
