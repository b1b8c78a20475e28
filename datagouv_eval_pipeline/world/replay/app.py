"""The OpenAI-compatible ASGI app: replay cassettes, record them through an upstream, or script.

Routes (``{name}`` is a cassette name; without it the configured default cassette is used)::

    POST /v1/chat/completions                    POST /cassettes/{name}/v1/chat/completions
    GET  /v1/models                              GET  /cassettes/{name}/v1/models
    GET  /_replay/health   GET /_replay/misses   GET /_replay/stats   POST /_replay/reset

Modes:

* ``replay``: answer from the cassette; a request with no recorded answer is a *miss*: HTTP 404
  ``{"error": {"type": "cassette_miss", ...}}`` whose message names the request and its key,
  and the miss is kept (``ReplayState.misses``) so a test or a pipeline step can fail loudly.
* ``record``: forward to the upstream with the caller's ``Authorization`` (or the key from an
  environment variable), store request and answer, credentials removed. The cassette is
  rewritten from scratch the first time this server records into it.
* ``record_new``: replay what the cassette has, record what it lacks (appending).
* ``scripted``: answer with a Python function of the request (a fake upstream for tests and the
  rate-limit benchmark); nothing is stored.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from datagouv_eval_pipeline.world.replay.cassette import (
    Cassette,
    CassetteError,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    cassette_path,
    check_name,
    load_cassette,
    save_cassette,
)
from datagouv_eval_pipeline.world.replay.completions import (
    apply_mistral_quirks,
    completion_to_sse,
    error_body,
)
from datagouv_eval_pipeline.world.replay.matching import (
    canonical_request,
    describe_request,
    first_difference,
    request_key,
    summarise_value,
)
from datagouv_eval_pipeline.world.replay.scrub import (
    scrub_headers,
    scrub_json,
    secret_values,
)
from datagouv_eval_pipeline.world.replay.simulate import (
    ProviderSimulation,
    SlidingWindowLimiter,
    retry_after_headers,
)

Mode = Literal["replay", "record", "record_new", "scripted"]
MODES: tuple[Mode, ...] = ("replay", "record", "record_new", "scripted")
Responder = Callable[[dict[str, Any]], Mapping[str, Any]]
"""A scripted answer: the decoded request body in, a chat-completion body out."""

MISS_STATUS = 404
# Statuses that say "try again later" or "wrong credentials": passed to the caller, never
# stored in a cassette (a replayed 401 or 429 would be a lie about the recorded run).
_NOT_RECORDED = frozenset({401, 403, 408, 409, 425, 429})
# Upstream answer headers that would be wrong once replayed by this server, or only add noise
# to a re-recorded cassette's diff.
_REPLAY_SKIP_HEADERS = frozenset({"content-type", "date", "server"})
_UNSTORED_HEADERS = frozenset({"date", "server"})
_NO_RETRY = {"x-should-retry": "false"}


@dataclass(frozen=True)
class ReplayConfig:
    """How the server answers.

    Attributes:
        mode: ``replay``, ``record``, ``record_new`` or ``scripted``.
        cassettes_dir: Directory of ``<name>.json`` cassettes (replay and record modes).
        default_cassette: Cassette used by the plain ``/v1/...`` routes.
        upstream_url: OpenAI-compatible base URL to record from, e.g.
            ``https://api.mistral.ai/v1`` (record modes).
        upstream_api_key_env: If set, the upstream key is read from this environment
            variable (at request time) instead of the caller's ``Authorization`` header.
        upstream_timeout_s: Timeout of one upstream request.
        responder: The scripted answer function (scripted mode).
        simulation: Latency, rate limit, faults, Mistral reshaping.
        repeat_exhausted: In replay, once every recorded answer for a key was used, answer
            the last one again instead of missing (for repeats of the same run).
        models: Extra model ids listed by ``GET /v1/models``.
        required_api_key: If set, chat requests without ``Authorization: Bearer <it>`` get
            401, like a real provider (lets a scripted upstream prove the key was forwarded).
    """

    mode: Mode = "replay"
    cassettes_dir: Path | None = None
    default_cassette: str = "default"
    upstream_url: str | None = None
    upstream_api_key_env: str | None = None
    upstream_timeout_s: float = 120.0
    responder: Responder | None = None
    simulation: ProviderSimulation = field(default_factory=ProviderSimulation)
    repeat_exhausted: bool = False
    models: tuple[str, ...] = ()
    required_api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode: expected one of {MODES}, got {self.mode!r}")
        check_name(self.default_cassette)
        if self.mode != "scripted" and self.cassettes_dir is None:
            raise ValueError(f"mode {self.mode!r} needs cassettes_dir")
        if self.mode in ("record", "record_new"):
            if not self.upstream_url:
                raise ValueError(f"mode {self.mode!r} needs upstream_url")
            if not self.upstream_url.startswith(("http://", "https://")):
                raise ValueError(f"upstream_url must be http(s), got {self.upstream_url!r}")
        if self.mode == "scripted" and self.responder is None:
            raise ValueError("mode 'scripted' needs a responder")


@dataclass(frozen=True)
class ReplayMiss:
    """A request the cassette had no answer for."""

    cassette: str
    key: str
    request: str
    reason: str
    closest: str | None = None

    @property
    def message(self) -> str:
        """The full, human-readable explanation (also the HTTP error message)."""
        text = (
            f"cassette miss in {self.cassette!r}: {self.reason}. "
            f"Request key {self.key}: {self.request}."
        )
        if self.closest:
            text += f" Closest recorded request: {self.closest}."
        return text

    def as_dict(self) -> dict[str, str | None]:
        """JSON-ready form (used by ``GET /_replay/misses``)."""
        return {
            "cassette": self.cassette,
            "key": self.key,
            "request": self.request,
            "reason": self.reason,
            "closest": self.closest,
            "message": self.message,
        }


class CassetteMissError(AssertionError):
    """Raised by :meth:`ReplayState.raise_for_misses` when any request missed."""

    def __init__(self, misses: list[ReplayMiss]) -> None:
        """Keep the misses and build a message listing each of them."""
        self.misses = misses
        lines = [f"{len(misses)} request(s) had no recorded answer:"]
        lines += [f"  - {miss.message}" for miss in misses]
        super().__init__("\n".join(lines))


@dataclass
class _Stats:
    requests: int = 0
    rate_limited: int = 0
    faults: int = 0
    replayed: int = 0
    recorded: int = 0
    scripted: int = 0
    misses: int = 0
    upstream_errors: int = 0


class ReplayState:
    """Cassettes in memory, replay cursors, misses and counters; shared by the app (thread-safe)."""

    def __init__(self, config: ReplayConfig) -> None:
        """Start with nothing loaded."""
        self.config = config
        self._lock = threading.RLock()
        self._cassettes: dict[str, Cassette] = {}
        self._cursors: dict[tuple[str, str], int] = {}
        self._fresh: set[str] = set()
        self._misses: list[ReplayMiss] = []
        self._stats = _Stats()
        simulation = config.simulation
        self.limiter = (
            SlidingWindowLimiter(simulation.rate_limit_rpm, simulation.rate_window_s)
            if simulation.rate_limit_rpm is not None
            else None
        )

    # -- inspection -------------------------------------------------------------------------

    @property
    def misses(self) -> list[ReplayMiss]:
        """Every miss so far, in order."""
        with self._lock:
            return list(self._misses)

    def stats(self) -> dict[str, int]:
        """Counters: requests, rate_limited, faults, replayed, recorded, scripted, misses..."""
        with self._lock:
            return dict(vars(self._stats))

    def raise_for_misses(self) -> None:
        """Raise :class:`CassetteMissError` naming every request that missed, if any."""
        misses = self.misses
        if misses:
            raise CassetteMissError(misses)

    def reset(self) -> None:
        """Rewind replay cursors, forget misses and counters, reload cassettes from disk."""
        with self._lock:
            self._cassettes.clear()
            self._cursors.clear()
            self._fresh.clear()
            self._misses.clear()
            self._stats = _Stats()

    # -- counters ---------------------------------------------------------------------------

    def count(self, name: str) -> int:
        """Add one to a counter and return its new value."""
        with self._lock:
            value = int(getattr(self._stats, name)) + 1
            setattr(self._stats, name, value)
            return value

    # -- cassettes --------------------------------------------------------------------------

    def _path(self, name: str) -> Path:
        assert self.config.cassettes_dir is not None  # checked by ReplayConfig
        return cassette_path(self.config.cassettes_dir, name)

    def cassette(self, name: str) -> Cassette | None:
        """The cassette ``name`` as this server sees it (None if there is no file yet).

        Raises:
            CassetteError: the file exists and is not a valid cassette.
        """
        with self._lock:
            if name in self._cassettes:
                return self._cassettes[name]
            if self.config.mode == "record":
                return None
            path = self._path(name)
            if not path.exists():
                return None
            cassette = load_cassette(path)
            self._cassettes[name] = cassette
            return cassette

    def lookup(self, name: str, body: Mapping[str, Any], key: str) -> Interaction | ReplayMiss:
        """The next recorded interaction for ``key`` in cassette ``name``, or the miss."""
        with self._lock:
            cassette = self.cassette(name)
            if cassette is None:
                return ReplayMiss(
                    name,
                    key,
                    describe_request(body),
                    f"no cassette file {self._path(name)}",
                )
            matches = [i for i in cassette.interactions if i.key == key]
            used = self._cursors.get((name, key), 0)
            if used < len(matches):
                self._cursors[(name, key)] = used + 1
                return matches[used]
            if matches and self.config.repeat_exhausted:
                return matches[-1]
            if matches:
                reason = (
                    f"all {len(matches)} recorded answer(s) for this request were already "
                    "replayed (the run asked it more often than when it was recorded)"
                )
                return ReplayMiss(name, key, describe_request(body), reason)
            reason = (
                f"no recorded request with this key among the {len(cassette.interactions)} "
                f"interaction(s) of {self._path(name)}"
            )
            return ReplayMiss(name, key, describe_request(body), reason, _closest(cassette, body))

    def add_miss(self, miss: ReplayMiss) -> None:
        """Remember a miss."""
        with self._lock:
            self._misses.append(miss)
            self._stats.misses += 1

    def record(self, name: str, interaction: Interaction) -> None:
        """Append an interaction to cassette ``name`` and write the file."""
        with self._lock:
            cassette: Cassette | None
            if self.config.mode == "record" and name not in self._fresh:
                # A record run replaces what the cassette held before.
                cassette = Cassette(name=name)
                self._fresh.add(name)
            else:
                cassette = self.cassette(name) or Cassette(name=name)
            cassette.interactions.append(interaction)
            self._cassettes[name] = cassette
            if self.config.mode == "record_new":
                # Keep the new answer from being replayed back to the caller that caused it.
                count = sum(1 for i in cassette.interactions if i.key == interaction.key)
                self._cursors[(name, interaction.key)] = count
            save_cassette(cassette, self._path(name))
            self._stats.recorded += 1


def _leading_equal_messages(left: Any, right: Any) -> int:
    if not isinstance(left, list) or not isinstance(right, list):
        return 0
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count


def _closest(cassette: Cassette, body: Mapping[str, Any]) -> str | None:
    """Describe the recorded request most like ``body`` and where they first differ."""
    wanted = canonical_request(body)
    best: tuple[tuple[int, int], int, dict[str, Any]] | None = None
    for index, interaction in enumerate(cassette.interactions):
        recorded = canonical_request(interaction.request.body)
        score = (
            int(recorded.get("model") == wanted.get("model")),
            _leading_equal_messages(recorded.get("messages"), wanted.get("messages")),
        )
        if best is None or score > best[0]:
            best = (score, index, recorded)
    if best is None:
        return None
    _, index, recorded = best
    difference = first_difference(recorded, wanted)
    where = "no difference in the canonical request (the cassette was keyed differently)"
    if difference is not None:
        path, was, now = difference
        where = (
            f"first difference at {path}: recorded {summarise_value(was)}, "
            f"requested {summarise_value(now)}"
        )
    return f"interaction #{index} (key {cassette.interactions[index].key}), {where}"


def _error(
    status: int,
    message: str,
    *,
    error_type: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    return JSONResponse(
        error_body(message, error_type=error_type, code=code, **extra),
        status_code=status,
        headers=dict(headers or {}),
    )


def _wants_usage(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, Mapping) and bool(options.get("include_usage"))


def _answer(
    state: ReplayState,
    body: Mapping[str, Any],
    status: int,
    payload: Any,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """Send a completion (reshaped if asked), as JSON or as SSE when the request streams."""
    if state.config.simulation.mistral_quirks and status == 200:
        payload = apply_mistral_quirks(payload)
    extra = {k: v for k, v in (headers or {}).items() if k.lower() not in _REPLAY_SKIP_HEADERS}
    if status == 200 and body.get("stream") and isinstance(payload, Mapping):
        chunks: Iterator[str] = completion_to_sse(payload, include_usage=_wants_usage(body))
        return StreamingResponse(chunks, media_type="text/event-stream", headers=extra)
    return JSONResponse(payload, status_code=status, headers=extra)


async def _forward(
    state: ReplayState, request: Request, body: dict[str, Any], name: str, key: str
) -> Response:
    """Send the request upstream; store the answer unless it is transient."""
    config = state.config
    assert config.upstream_url is not None  # checked by ReplayConfig
    headers = {"content-type": "application/json", "accept": "application/json"}
    if config.upstream_api_key_env:
        key_value = os.environ.get(config.upstream_api_key_env, "")
        if not key_value:
            return _error(
                500,
                f"environment variable {config.upstream_api_key_env} (upstream API key) is not set",
                error_type="replay_config_error",
                headers=_NO_RETRY,
            )
        headers["authorization"] = f"Bearer {key_value}"
    elif "authorization" in request.headers:
        headers["authorization"] = request.headers["authorization"]
    # Cassettes hold whole completions; a streaming caller gets them re-emitted as SSE.
    upstream_body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    url = config.upstream_url.rstrip("/") + "/chat/completions"
    started = time.perf_counter()
    try:
        async with httpx.AsyncClient(timeout=config.upstream_timeout_s) as client:
            upstream = await client.post(url, json=upstream_body, headers=headers)
    except httpx.HTTPError as error:
        state.count("upstream_errors")
        return _error(
            502,
            f"upstream {url} unreachable: {type(error).__name__}: {error}",
            error_type="upstream_error",
        )
    elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
    secrets = secret_values(dict(request.headers)) + secret_values(headers)
    try:
        payload: Any = upstream.json()
    except ValueError:
        payload = {"text": upstream.text}
    payload = scrub_json(payload, secrets)
    answer_headers = {
        name: value
        for name, value in scrub_headers(dict(upstream.headers), secrets).items()
        if name not in _UNSTORED_HEADERS
    }
    if upstream.status_code >= 500 or upstream.status_code in _NOT_RECORDED:
        state.count("upstream_errors")
        passed = {k: v for k, v in upstream.headers.items() if k.lower().startswith("retry-after")}
        return JSONResponse(payload, status_code=upstream.status_code, headers=passed)
    interaction = Interaction(
        key=key,
        request=RecordedRequest(
            method=request.method,
            path=request.url.path,
            headers=scrub_headers(dict(request.headers), secrets),
            body=scrub_json(body, secrets),
        ),
        response=RecordedResponse(
            status=upstream.status_code, headers=answer_headers, body=payload
        ),
        recorded_at=datetime.now(UTC).replace(microsecond=0),
        upstream_ms=elapsed_ms,
    )
    state.record(name, interaction)
    return _answer(state, body, upstream.status_code, payload, answer_headers)


def _miss_response(miss: ReplayMiss) -> JSONResponse:
    return _error(
        MISS_STATUS,
        miss.message,
        error_type="cassette_miss",
        code="cassette_miss",
        headers=_NO_RETRY,
        cassette=miss.cassette,
        key=miss.key,
        request=miss.request,
        closest=miss.closest,
    )


async def _chat(request: Request, state: ReplayState, name: str) -> Response:
    config = state.config
    try:
        check_name(name)
    except CassetteError as error:
        return _error(400, str(error), error_type="invalid_request_error")
    try:
        body = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return _error(400, f"request body is not JSON: {error}", error_type="invalid_request_error")
    if not isinstance(body, dict):
        return _error(400, "request body must be a JSON object", error_type="invalid_request_error")

    if config.required_api_key is not None and not hmac.compare_digest(
        request.headers.get("authorization", "").encode(),
        f"Bearer {config.required_api_key}".encode(),
    ):
        return _error(
            401,
            "Incorrect API key provided.",
            error_type="invalid_request_error",
            code="invalid_api_key",
        )
    if state.limiter is not None:
        wait = state.limiter.try_acquire()
        if wait is not None:
            state.count("rate_limited")
            limit = config.simulation.rate_limit_rpm
            return _error(
                429,
                f"Rate limit reached: {limit} requests per {config.simulation.rate_window_s:g} s. "
                f"Retry after {wait:.3f} s.",
                error_type="rate_limit_error",
                code="rate_limit_exceeded",
                headers=retry_after_headers(wait),
            )
    ordinal = state.count("requests")
    if config.simulation.latency_s > 0:
        await asyncio.sleep(config.simulation.latency_s)
    fault = config.simulation.fault_for(ordinal)
    if fault is not None:
        state.count("faults")
        return _error(
            fault,
            f"injected fault: request #{ordinal} answers {fault}",
            error_type="server_error" if fault >= 500 else "invalid_request_error",
        )

    if config.mode == "scripted":
        assert config.responder is not None  # checked by ReplayConfig
        try:
            payload = dict(config.responder(body))
        except Exception as error:
            return _error(
                500,
                f"scripted responder failed: {type(error).__name__}: {error}",
                error_type="server_error",
                headers=_NO_RETRY,
            )
        state.count("scripted")
        return _answer(state, body, 200, payload)

    key = request_key(body)
    if config.mode == "record":
        return await _forward(state, request, body, name, key)
    try:
        found = state.lookup(name, body, key)
    except CassetteError as error:
        return _error(500, str(error), error_type="cassette_error", headers=_NO_RETRY)
    if isinstance(found, Interaction):
        state.count("replayed")
        return _answer(
            state, body, found.response.status, found.response.body, found.response.headers
        )
    if config.mode == "record_new":
        return await _forward(state, request, body, name, key)
    state.add_miss(found)
    return _miss_response(found)


def _models(state: ReplayState, name: str) -> Response:
    ids: dict[str, None] = dict.fromkeys(state.config.models)
    if state.config.mode != "scripted":
        try:
            cassette = state.cassette(check_name(name))
        except CassetteError as error:
            return _error(400, str(error), error_type="invalid_request_error")
        if cassette is not None:
            ids.update(dict.fromkeys(cassette.models()))
    data = [{"id": i, "object": "model", "created": 0, "owned_by": "replay"} for i in ids]
    return JSONResponse({"object": "list", "data": data})


def create_app(config: ReplayConfig, state: ReplayState | None = None) -> Starlette:
    """Build the ASGI app for ``config`` (pass ``state`` to inspect misses from outside).

    Args:
        config: Mode, cassettes, upstream and simulation settings.
        state: Shared state; a new one is made if omitted (reachable as ``app.state.replay``).
    """
    shared = state or ReplayState(config)

    async def chat_default(request: Request) -> Response:
        return await _chat(request, shared, config.default_cassette)

    async def chat_named(request: Request) -> Response:
        return await _chat(request, shared, str(request.path_params["name"]))

    async def models_default(request: Request) -> Response:
        return _models(shared, config.default_cassette)

    async def models_named(request: Request) -> Response:
        return _models(shared, str(request.path_params["name"]))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "mode": config.mode})

    async def misses(request: Request) -> Response:
        return JSONResponse({"misses": [m.as_dict() for m in shared.misses]})

    async def stats(request: Request) -> Response:
        return JSONResponse(shared.stats())

    async def reset(request: Request) -> Response:
        shared.reset()
        return JSONResponse({"status": "reset"})

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_default, methods=["POST"]),
            Route("/v1/models", models_default, methods=["GET"]),
            Route("/cassettes/{name}/v1/chat/completions", chat_named, methods=["POST"]),
            Route("/cassettes/{name}/v1/models", models_named, methods=["GET"]),
            Route("/_replay/health", health, methods=["GET"]),
            Route("/_replay/misses", misses, methods=["GET"]),
            Route("/_replay/stats", stats, methods=["GET"]),
            Route("/_replay/reset", reset, methods=["POST"]),
        ]
    )
    app.state.replay = shared
    return app
