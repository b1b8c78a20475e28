"""Record/replay of OpenAI-compatible chat completions through a local server.

The agent code talks to this server exactly as it talks to Mistral, OpenAI or Albert (same
``openai`` client, same pydantic-ai ``OpenAIChatModel``), so the real provider code path runs
offline. See ``docs/replay.md``.
"""

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
