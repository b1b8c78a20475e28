"""Record/replay of OpenAI-compatible chat completions through a local server.

The agent code talks to this server exactly as it talks to Mistral, OpenAI or Albert (same
``openai`` client, same pydantic-ai ``OpenAIChatModel``), so the real provider code path runs
offline. See ``docs/replay.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from datagouv_eval_pipeline.base.faces import lazy_attributes

if TYPE_CHECKING:
    from datagouv_eval_pipeline.world.replay.app import (
        MISS_STATUS,
        MODES,
        CassetteMissError,
        Mode,
        ReplayConfig,
        ReplayMiss,
        ReplayState,
        Responder,
        create_app,
    )
    from datagouv_eval_pipeline.world.replay.cassette import (
        CASSETTE_VERSION,
        Cassette,
        CassetteError,
        Interaction,
        audit_cassette,
        cassette_name,
        cassette_path,
        list_cassettes,
        load_cassette,
        save_cassette,
    )
    from datagouv_eval_pipeline.world.replay.completions import (
        apply_mistral_quirks,
        text_completion,
        tool_call_completion,
    )
    from datagouv_eval_pipeline.world.replay.matching import (
        KEY_SCHEME,
        VOLATILE_FIELDS,
        canonical_request,
        describe_request,
        request_key,
    )
    from datagouv_eval_pipeline.world.replay.scrub import find_secrets, scrub_headers, scrub_json
    from datagouv_eval_pipeline.world.replay.server import ReplayServer, serve_forever
    from datagouv_eval_pipeline.world.replay.simulate import ProviderSimulation

_MODULE_OF: dict[str, str] = {
    "CASSETTE_VERSION": ".cassette",
    "Cassette": ".cassette",
    "CassetteError": ".cassette",
    "CassetteMissError": ".app",
    "Interaction": ".cassette",
    "KEY_SCHEME": ".matching",
    "MISS_STATUS": ".app",
    "MODES": ".app",
    "Mode": ".app",
    "ProviderSimulation": ".simulate",
    "ReplayConfig": ".app",
    "ReplayMiss": ".app",
    "ReplayServer": ".server",
    "ReplayState": ".app",
    "Responder": ".app",
    "VOLATILE_FIELDS": ".matching",
    "apply_mistral_quirks": ".completions",
    "audit_cassette": ".cassette",
    "canonical_request": ".matching",
    "cassette_name": ".cassette",
    "cassette_path": ".cassette",
    "create_app": ".app",
    "describe_request": ".matching",
    "find_secrets": ".scrub",
    "list_cassettes": ".cassette",
    "load_cassette": ".cassette",
    "request_key": ".matching",
    "save_cassette": ".cassette",
    "scrub_headers": ".scrub",
    "scrub_json": ".scrub",
    "serve_forever": ".server",
    "text_completion": ".completions",
    "tool_call_completion": ".completions",
}
"""Each public name, and the module that defines it."""

if not TYPE_CHECKING:  # hidden from mypy, which then checks each name imported from the face
    __getattr__ = lazy_attributes(__name__, _MODULE_OF)


__all__ = [
    "CASSETTE_VERSION",
    "KEY_SCHEME",
    "MISS_STATUS",
    "MODES",
    "VOLATILE_FIELDS",
    "Cassette",
    "CassetteError",
    "CassetteMissError",
    "Interaction",
    "Mode",
    "ProviderSimulation",
    "ReplayConfig",
    "ReplayMiss",
    "ReplayServer",
    "ReplayState",
    "Responder",
    "apply_mistral_quirks",
    "audit_cassette",
    "canonical_request",
    "cassette_name",
    "cassette_path",
    "create_app",
    "describe_request",
    "find_secrets",
    "list_cassettes",
    "load_cassette",
    "request_key",
    "save_cassette",
    "scrub_headers",
    "scrub_json",
    "serve_forever",
    "text_completion",
    "tool_call_completion",
]
