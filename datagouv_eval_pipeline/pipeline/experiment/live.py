"""The live configuration of the weekly run, read from the instance's environment.

The weekly schedule runs against the real catalog, with the models whose API keys the
instance's environment holds and the judge configured for live use:

* **catalog**: the production URLs (``TwinUrls.live()``); ``DATAGOUV_EVAL_WEEKLY_CATALOG=twin``
  keeps the weekly run on the local twin instead (a machine without the network);
* **models**: every provider of the partitions whose ``api_key_env`` is set (non-empty), plus
  the offline baselines, which need no key. A provider whose variable is unset is left out of
  the run and named (by the variable's name; values are never read beyond "is it set");
* **judge**: ``DATAGOUV_EVAL_WEEKLY_JUDGE`` (``KIND[:PROVIDER/MODEL]``, as ``--judge``), else
  ``judge.yml``; an LLM judge whose key is unset is an error, not a silent downgrade;
  ``DATAGOUV_EVAL_WEEKLY_JUDGE_BASE_URL`` sends its requests elsewhere (a gateway).

Secrets stay in the environment: the run config names no key, and the agents and the judge
read them from the variables ``models.yml`` names, at run time.

Also here: which cells cannot run live (the twin's emulations of the MCP server exist only
offline) and why a pre-flight must stop a run (the catalog unreachable, every task quarantined).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datagouv_eval_pipeline.core.benchmark import (
    BENCHMARK_CONFIG_DIR,
    Cell,
    McpSource,
    load_benchmark_config,
)
from datagouv_eval_pipeline.core.judges import (
    JUDGE_FILE,
    JudgeKind,
    JudgeSpecError,
    load_judge_spec,
)
from datagouv_eval_pipeline.pipeline.experiment.documents import CatalogValidationDocument

CATALOG_ENV = "DATAGOUV_EVAL_WEEKLY_CATALOG"
"""``live`` (the default) or ``twin``: what the weekly run reads."""
JUDGE_ENV = "DATAGOUV_EVAL_WEEKLY_JUDGE"
"""The weekly run's judge, ``KIND[:PROVIDER/MODEL]`` (default: ``judge.yml``)."""
JUDGE_BASE_URL_ENV = "DATAGOUV_EVAL_WEEKLY_JUDGE_BASE_URL"
"""Another OpenAI-compatible URL for the weekly judge's requests (default: the provider's)."""


class LiveConfigError(ValueError):
    """The environment asks for a live run that cannot work; the message says what to set."""


@dataclass(frozen=True)
class LiveConfig:
    """What the weekly run covers and how it is configured.

    Attributes:
        live: Read the production catalog (False: the local twin).
        providers: Providers whose cells run, in partition order.
        left_out: Provider → why it does not run (the unset variable, by name).
        judge: The ``judge`` resource's config (never a key).
    """

    live: bool
    providers: tuple[str, ...]
    left_out: dict[str, str] = field(default_factory=dict)
    judge: dict[str, str] = field(default_factory=dict)

    def run_config(self) -> dict[str, Any]:
        """The run config of one weekly run (resources ``catalog``, ``judge``)."""
        return {
            "resources": {
                "catalog": {"config": {"live": self.live}},
                "judge": {"config": dict(self.judge)},
            }
        }


def live_config(
    cells: Sequence[Cell],
    environ: Mapping[str, str],
    *,
    config_dir: Path = BENCHMARK_CONFIG_DIR,
) -> LiveConfig:
    """Read the weekly run's configuration from ``environ`` (the instance's environment).

    Args:
        cells: The partitions' cells (which providers exist).
        environ: The environment (only the names below and the providers' key variables are
            looked at, and a key only for being set).
        config_dir: The benchmark configuration (``judge.yml``, ``models.yml``).

    Raises:
        LiveConfigError: An unknown catalog choice, an invalid judge, or an LLM judge whose
            provider's key is not set.
    """
    choice = environ.get(CATALOG_ENV, "live").strip().lower() or "live"
    if choice not in ("live", "twin"):
        raise LiveConfigError(f"{CATALOG_ENV}={choice!r}: expected 'live' or 'twin'")
    providers: list[str] = []
    left_out: dict[str, str] = {}
    for cell in cells:
        name = cell.model.provider
        if name in providers or name in left_out:
            continue
        variable = cell.model.api_key_env
        if variable is None or environ.get(variable, "").strip():
            providers.append(name)
        else:
            left_out[name] = f"{variable} is not set"
    return LiveConfig(
        live=choice == "live",
        providers=tuple(providers),
        left_out=left_out,
        judge=_judge(environ, config_dir),
    )


def _judge(environ: Mapping[str, str], config_dir: Path) -> dict[str, str]:
    try:
        spec = load_judge_spec(config_dir / JUDGE_FILE)
        choice = environ.get(JUDGE_ENV, "").strip()
        if choice:
            spec = spec.with_choice(choice)
    except JudgeSpecError as error:
        raise LiveConfigError(f"{JUDGE_ENV}: {error}") from None
    config = {"kind": spec.kind.value, "model": spec.model or ""}
    base_url = environ.get(JUDGE_BASE_URL_ENV, "").strip()
    if base_url:
        config["base_url"] = base_url
    if spec.kind is JudgeKind.DETERMINISTIC or spec.model is None:
        return config
    provider_name = spec.model.split("/", 1)[0]
    models = load_benchmark_config(config_dir).models
    provider = next((p for p in models.providers if p.name == provider_name), None)
    if provider is None:
        raise LiveConfigError(f"judge model {spec.model!r}: no provider {provider_name!r}")
    variable = provider.api_key_env
    if variable and not environ.get(variable, "").strip() and not base_url:
        raise LiveConfigError(
            f"the weekly judge is {spec.kind.value}:{spec.model}, whose key {variable} is not "
            f"set in the instance's environment: set it, or choose another judge with "
            f"{JUDGE_ENV} (e.g. {JUDGE_ENV}=deterministic)"
        )
    return config


def offline_only(cell: Cell) -> str | None:
    """Why ``cell`` cannot run against the live catalog, or None when it can.

    The twin's emulations of the MCP server read the twin's own catalog: a live run needs the
    version as a deployed server (``url:``) or a real build (``build:``).
    """
    if "mcp" in cell.capabilities and cell.mcp_source == McpSource.TWIN.value:
        return (
            f"MCP {cell.mcp_version} is the twin's emulation, which reads the twin only; a live "
            "run needs a `url:` or `build:` entry for it in mcp_versions.yml"
        )
    return None


def preflight_problem(
    document: CatalogValidationDocument | None,
    *,
    skip_validation: bool,
    task_ids: Sequence[str] = (),
) -> str | None:
    """Why the pre-flight must stop the run, or None when the agents may go on.

    Args:
        document: The ``catalog_validation`` run store document (report and probe).
        skip_validation: The run ignores quarantines (``--skip-validation``): only an
            unreachable catalog stops it then.
        task_ids: The run's task selection (empty: every active task); when every selected
            task the pre-flight covered is quarantined, nothing would run either.

    Returns:
        The reason: no pre-flight, the catalog unreachable (the probe's error), every check
        errored, or every task quarantined (the first task's reason).
    """
    if document is None:
        return "no pre-flight report: catalog_validation has not run"
    probe = document.probe
    if probe is not None and not probe.ok:
        return f"the catalog is unreachable: {probe.detail or 'no answer'}"
    report = document.report
    checks = [check for task in report.tasks for check in task.checks]
    if report.tasks and not checks:
        return "the pre-flight ran no check"
    if checks and all(check.outcome == "error" for check in checks):
        return f"every pre-flight check errored, e.g. {checks[0].reason}"
    wanted = set(task_ids)
    tasks = [task for task in report.tasks if not wanted or task.task_id in wanted]
    if skip_validation or not tasks:
        return None
    if all(task.status == "quarantined" for task in tasks):
        first = tasks[0]
        why = first.failing[0].reason if first.failing else "quarantined"
        which = "selected task" if wanted else "task"
        return (
            f"every {which} is quarantined ({len(tasks)} of {len(tasks)}): nothing would run; "
            f"{first.task_id}: {why}"
        )
    return None
