"""Resources: where the catalog, the run store and the warehouse are, and the run's settings.

Every field has a default for the embedded world (the twin, ``data/``); production overrides
them with environment variables or run config. API keys never pass through here: the agents
read them from the environment by the *name* the models YAML gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import dagster as dg
from pydantic import Field, PrivateAttr

from datagouv_eval_pipeline.core.benchmark import BENCHMARK_CONFIG_DIR, load_benchmark_config
from datagouv_eval_pipeline.core.judges import JUDGE_FILE, JudgeKind, JudgeSpec, load_judge_spec
from datagouv_eval_pipeline.pipeline.experiment import RunStore, default_run_store
from datagouv_eval_pipeline.pipeline.warehouse import DUCKDB_ENV, default_duckdb_path
from datagouv_eval_pipeline.world.catalogue import TwinUrls

# What the resources start or build (the twin and its HTTP stack, the judges, the MCP builds)
# is imported where they do it, when a run uses them: a code-location load does not pay for it.
if TYPE_CHECKING:
    from datagouv_eval_pipeline.core.judges import Judge
    from datagouv_eval_pipeline.core.metrics import CatalogLookup
    from datagouv_eval_pipeline.pipeline.experiment import AgentRunCache
    from datagouv_eval_pipeline.world.api import TwinServer
    from datagouv_eval_pipeline.world.front import Front
    from datagouv_eval_pipeline.world.local_models import LocalServers
    from datagouv_eval_pipeline.world.mcp_builds import BuildServers

__all__ = [
    "DUCKDB_ENV",
    "CatalogResource",
    "ExperimentSettings",
    "JudgeResource",
    "RunStoreResource",
    "WarehouseResource",
    "default_duckdb_path",
]


class WarehouseResource(dg.ConfigurableResource["WarehouseResource"]):
    """The DuckDB file the ``warehouse`` asset writes and dbt reads.

    Attributes:
        path: Absolute path of the DuckDB file.
    """

    path: str = ""

    def db_path(self) -> Path:
        """The file, its directory created."""
        path = Path(self.path or default_duckdb_path())
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


class RunStoreResource(dg.ConfigurableResource["RunStoreResource"]):
    """The run store partitioned stages write (one JSON document per stage and cell).

    Attributes:
        root: Its directory (``$DATAGOUV_EVAL_RUN_STORE`` or ``data/run_store``).
    """

    root: str = ""

    def store(self) -> RunStore:
        """The run store.

        Raises:
            dagster.Failure: Its path is a file (the run then fails at its first stage, saying
                so, rather than with an empty reason deep inside).
        """
        root = Path(self.root) if self.root else default_run_store()
        if root.exists() and not root.is_dir():
            raise dg.Failure(
                description=(
                    f"{root}: the run store is a file, not a directory; set "
                    "DATAGOUV_EVAL_RUN_STORE (or the run_store resource's root) to a directory"
                )
            )
        return RunStore(root)

    def agent_cache(self) -> AgentRunCache:
        """The agent-run cache, inside the run store."""
        from datagouv_eval_pipeline.pipeline.experiment import AgentRunCache

        return AgentRunCache(self.store().root / "cache" / "agent_runs")


class CatalogResource(dg.ConfigurableResource["CatalogResource"]):
    """The catalog agents and the pre-flight talk to: the local twin, or the live data.gouv.fr.

    The twin starts on first use (a free port on 127.0.0.1) and stops when the run ends, so a
    run of many cells pays its start-up once. So do the real MCP server builds cells name
    (``builds``): installed (cached) and started on first use, reading the twin through the
    hostname front (production in live mode), stopped with the run; and llama.cpp's server for
    each ``llama_cpp`` model a cell runs (``local_models``), on 127.0.0.1, stopped with the run.

    Attributes:
        live: Use the live data.gouv.fr endpoints instead of the twin.
        snapshot_id: Which twin snapshot to serve (default: the manifest's current one).
    """

    live: bool = False
    snapshot_id: str | None = None

    _server: TwinServer | None = PrivateAttr(default=None)
    _urls: TwinUrls | None = PrivateAttr(default=None)
    _front: Front | None = PrivateAttr(default=None)
    _builds: BuildServers | None = PrivateAttr(default=None)
    _lookup: CatalogLookup | None = PrivateAttr(default=None)
    _local_models: LocalServers | None = PrivateAttr(default=None)

    def urls(self) -> TwinUrls | None:
        """The twin's URLs (starting it if needed), or None in live mode."""
        if self.live:
            return None
        if self._urls is None:
            from datagouv_eval_pipeline.world.api import TwinServer

            server = TwinServer(snapshot_id=self.snapshot_id)
            self._urls = server.start()
            self._server = server
        return self._urls

    def validation_urls(self) -> TwinUrls:
        """Base URLs for the pre-flight: the production ones (the twin answers behind its front)."""
        return TwinUrls.live()

    def validation_proxy(self) -> tuple[str, str] | None:
        """The front before the twin (proxy URL, CA bundle) the pre-flight goes through.

        None in live mode. The front starts on first use and stops with the twin.
        """
        if self.live:
            return None
        if self._front is None:
            from datagouv_eval_pipeline.world.api import served_by

            self.urls()
            assert self._server is not None
            self._front = served_by(self._server).front().start()
        assert self._front.authority is not None
        return self._front.proxy_url, str(self._front.authority.bundle_path)

    def served_snapshot(self) -> str | None:
        """The snapshot id the twin serves (None in live mode)."""
        if self.live:
            return None
        self.urls()
        assert self._server is not None
        return self._server.store.snapshot_id

    def snapshot_clock(self) -> Any:
        """The twin's "now" (its snapshot date) for freshness checks; None in live mode."""
        if self.live:
            return None
        self.urls()
        assert self._server is not None
        return self._server.store.now

    def builds(self) -> BuildServers:
        """The run's MCP server builds (nothing starts until a build cell asks for one)."""
        if self._builds is None:
            from datagouv_eval_pipeline.world.mcp_builds import BuildServers

            twin = None
            if not self.live:
                self.urls()
                twin = self._server
            self._builds = BuildServers(twin=twin)
        return self._builds

    def local_models(self) -> LocalServers:
        """The run's llama.cpp servers of ``llama_cpp`` models (each starts on first use)."""
        if self._local_models is None:
            from datagouv_eval_pipeline.world.local_models import LocalServers

            self._local_models = LocalServers()
        return self._local_models

    def lookup(self) -> CatalogLookup:
        """Slug ↔ id lookups in this catalog, for scoring.

        The twin's store (the one being served, or the snapshot loaded without serving it) or
        the live main API.
        """
        if self._lookup is None:
            from datagouv_eval_pipeline.pipeline.experiment import (
                ApiCatalogLookup,
                StoreCatalogLookup,
            )
            from datagouv_eval_pipeline.world.catalogue import CatalogStore

            if self.live:
                self._lookup = ApiCatalogLookup(TwinUrls.live().datagouv_api)
            elif self._server is not None:
                self._lookup = StoreCatalogLookup(self._server.store)
            else:
                self._lookup = StoreCatalogLookup(CatalogStore.load(None, self.snapshot_id))
        return self._lookup

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Stop the builds, the local model servers and the twin (and its front) if started."""
        if self._local_models is not None:
            self._local_models.close()
            self._local_models = None
        if self._builds is not None:
            self._builds.close()
            self._builds = None
        if self._front is not None:
            self._front.stop()
            self._front = None
        if self._server is not None:
            self._server.stop()
            self._server = None
            self._urls = None


class JudgeResource(dg.ConfigurableResource["JudgeResource"]):
    """Which judge scores the runs: ``task_specs/benchmark/judge.yml``, overridable per run.

    Attributes:
        kind: ``deterministic``, ``llm`` or ``hybrid``; empty keeps the file's kind.
        model: ``<provider>/<model>`` from ``models.yml``; empty keeps the file's model.
        base_url: An OpenAI-compatible URL to send judge requests to instead of the
            provider's (a replay server); empty keeps the file's.
    """

    kind: Literal["", "deterministic", "llm", "hybrid"] = ""
    model: str = ""
    base_url: str = ""

    _local_models: LocalServers | None = PrivateAttr(default=None)

    def spec(self) -> JudgeSpec:
        """The judge configuration with this run's overrides applied.

        Raises:
            JudgeSpecError: The file or an override is invalid.
        """
        spec = load_judge_spec(BENCHMARK_CONFIG_DIR / JUDGE_FILE)
        if self.kind or self.model:
            kind = self.kind or spec.kind.value
            spec = spec.with_choice(f"{kind}:{self.model}" if self.model else kind)
        return spec

    def judge(self, cache_dir: Path | None = None) -> Judge:
        """The judge (LLM answers cached under ``cache_dir``).

        Raises:
            JudgeSpecError: The configuration is invalid.
            JudgeModelError: The judge model cannot be reached (unknown, offline, no key).
        """
        from datagouv_eval_pipeline.core.judges import DeterministicJudge, build_judge
        from datagouv_eval_pipeline.world.local_models import LocalServers, served_model

        spec = self.spec()
        if spec.kind is JudgeKind.DETERMINISTIC:
            return DeterministicJudge()
        models = load_benchmark_config().models
        base_url = self.base_url or None
        served = served_model(spec.model, models) if spec.model and not base_url else None
        if served is not None:
            # A llama_cpp judge: its server starts here and stops with the run.
            if self._local_models is None:
                self._local_models = LocalServers()
            base_url = self._local_models.base_url(served)
        return build_judge(spec, models, cache_dir=cache_dir, base_url=base_url)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Stop the judge's llama.cpp server if this run started one."""
        if self._local_models is not None:
            self._local_models.close()
            self._local_models = None


class ExperimentSettings(dg.ConfigurableResource["ExperimentSettings"]):
    """What a run covers: the launchpad equivalent of the original command-line options.

    Attributes:
        evaluation_types: Only cells of these evaluation types run (default: every cell of the
            partitions selected). Other cells keep their earlier results untouched.
        cells: Only these cells run (``experiment --models``, ``--cells``; default: every
            cell of the partitions selected). Other cells keep their earlier results untouched.
        model_base_url: Send the agents' model requests to this OpenAI-compatible URL instead
            of each provider's (a replay server, a local server); empty: the providers'.
        task_ids: Only these tasks run (default: every active task); the other tasks' earlier
            traces are kept.
        repeats: Runs per (cell, task).
        skip_validation: Run quarantined tasks too (the pre-flight is not consulted).
        rerun: Ignore the agent-run cache and ask the models again.
        max_concurrency: Task runs in flight at once within a cell (at most: a provider's
            slots bound it too).
        worker_processes: Worker processes for the extra lanes of offline providers (None: as
            many as their slots allow, one lane per 8 slots; 0: every offline cell in the run's
            own process, one after the other).
    """

    evaluation_types: list[str] = Field(default_factory=list)
    cells: list[str] = Field(default_factory=list)
    model_base_url: str = ""
    task_ids: list[str] = Field(default_factory=list)
    repeats: int = 1
    skip_validation: bool = False
    rerun: bool = False
    max_concurrency: int = 8
    worker_processes: int | None = Field(default=None, ge=0)
