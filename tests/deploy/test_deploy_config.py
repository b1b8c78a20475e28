"""The Dagster instance configs, the image recipe and the compose file, checked without Docker.

What a Docker engine would add (building the image, launching runs in containers) is listed in
docs/deploy.md; everything that can be decided from the files and Dagster's own schemas is here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from dagster import DagsterInstance, QueuedRunCoordinator
from dagster._config import process_config
from dagster._core.errors import DagsterInvalidConfigError
from dagster._core.instance.config import dagster_instance_config
from dagster._core.instance.ref import InstanceRef
from dagster._core.remote_origin import GrpcServerCodeLocationOrigin
from dagster._core.storage.config import pg_config
from dagster._core.workspace.load import location_origins_from_yaml_paths
from dagster_docker import DockerRunLauncher

from datagouv_eval_pipeline.cli import main
from datagouv_eval_pipeline.cli.dagster_home import (
    WHEEL_WORKSPACE,
    PoolsFileError,
    dev_command,
    load_pools,
    resolve_home,
)

ROOT = Path(__file__).resolve().parents[2]
LOCAL_HOME = ROOT / "dagster_home"
DEPLOY = ROOT / "deploy"
EXPECTED_POOLS = {
    "duckdb_writer",
}
SECRET_NAME = re.compile(r"(KEY|PASSWORD|TOKEN|SECRET)")


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _env_refs(node: Any) -> set[str]:
    """Every ``{env: NAME}`` in a Dagster config tree."""
    if isinstance(node, dict):
        if set(node) == {"env"}:
            return {node["env"]}
        return set().union(*(_env_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_env_refs(value) for value in node))
    return set()


@pytest.fixture
def deploy_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Set every variable deploy/dagster.yaml reads to a placeholder, as compose would."""
    names = _env_refs(_yaml(DEPLOY / "dagster.yaml"))
    for name in names:
        placeholder = "5432" if name.endswith("_PORT") else f"placeholder-{name.lower()}"
        monkeypatch.setenv(name, placeholder)
    yield names


# --- local instance (dagster_home/) ------------------------------------------------------------


def test_local_instance_config_passes_dagsters_schema() -> None:
    config, custom_class = dagster_instance_config(str(LOCAL_HOME))
    assert custom_class is None
    assert config["telemetry"] == {"enabled": False}
    assert config["concurrency"]["runs"]["max_concurrent_runs"] == 2
    assert config["concurrency"]["pools"] == {"granularity": "op", "default_limit": 1}


def test_the_schema_check_rejects_a_misspelt_key(tmp_path: Path) -> None:
    # guards the two tests above: the validation is strict, not a YAML load
    text = (LOCAL_HOME / "dagster.yaml").read_text(encoding="utf-8")
    (tmp_path / "dagster.yaml").write_text(
        text.replace("max_concurrent_runs", "max_concurent_runs"), encoding="utf-8"
    )
    with pytest.raises(DagsterInvalidConfigError, match="max_concurent_runs"):
        dagster_instance_config(str(tmp_path))


def test_local_instance_loads_applies_pools_and_reports_limits(tmp_path: Path) -> None:
    for name in ("dagster.yaml", "pools.yaml"):
        shutil.copy(LOCAL_HOME / name, tmp_path / name)
    # The CLI entry point, home taken from $DAGSTER_HOME (no --home).
    result = CliRunner().invoke(
        main, ["dagster", "pools", "--apply"], env={"DAGSTER_HOME": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert "default limit for other pools: 1" in result.output
    assert re.search(r"^\s+duckdb_writer\s+1$", result.output, re.MULTILINE)

    with DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path))) as instance:
        assert instance.telemetry_enabled is False
        assert instance.run_monitoring_enabled is True
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        concurrency = instance.get_concurrency_config()
        assert concurrency.run_queue_config is not None
        assert concurrency.run_queue_config.max_concurrent_runs == 2
        assert instance.global_op_concurrency_default_limit == 1
        storage = instance.event_log_storage
        limits = {pool.name: (pool.limit, pool.from_default) for pool in storage.get_pool_limits()}
        # pools.yaml's pool, and one pool per provider sized from models.yml.
        assert limits == {
            "duckdb_writer": (1, False),
            "agent_runs.offline": (8 * (os.cpu_count() or 1), False),
            "agent_runs.mistral": (4, False),
            "agent_runs.openai": (8, False),
            "agent_runs.albert": (2, False),
        }
        assert storage.get_concurrency_info("duckdb_writer").slot_count == 1
        # A pool nobody configured gets the default limit the first time a step asks for it.
        storage.initialize_concurrency_limit_to_default("some_new_pool")
        info = storage.get_concurrency_info("some_new_pool")
        assert (info.slot_count, info.using_default_limit) == (1, True)


def _pools_named_in_defs() -> set[str]:
    # Literal pool names only (pool="x" or a *_POOL = "x" constant); f-string pools are not seen.
    pattern = re.compile(r"""(?:\bpool\s*=\s*|_POOL\s*=\s*)["']([A-Za-z0-9_.-]+)["']""")
    names: set[str] = set()
    for path in (ROOT / "datagouv_eval_pipeline" / "defs").rglob("*.py"):
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return names


def test_both_pool_files_list_the_pools_the_definitions_use() -> None:
    used = _pools_named_in_defs()
    assert "duckdb_writer" in used  # the scan works
    for home in (LOCAL_HOME, DEPLOY):
        limits = load_pools(home / "pools.yaml")
        assert set(limits) == EXPECTED_POOLS, home
        assert used <= set(limits), f"{home}/pools.yaml lacks {sorted(used - set(limits))}"
        assert limits["duckdb_writer"] == 1, home


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pools:\n  duckdb_writer: -1\n", r"pools\.duckdb_writer: .*greater than or equal to 0"),
        ("pools: {}\nlimits: {a: 1}\n", r"limits: Extra inputs are not permitted"),
        ("pools:\n  'bad pool': 1\n", r"pools\.bad pool\.\[key\]: String should match pattern"),
        ("pools: [\n", r"not valid YAML"),
    ],
)
def test_a_bad_pools_file_names_the_file_and_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PoolsFileError, match=expected) as caught:
        load_pools(path)
    assert str(path) in str(caught.value)


def test_home_precedence_is_option_then_environment_then_project(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    assert resolve_home(tmp_path, {"DAGSTER_HOME": str(other)}) == tmp_path.resolve()
    assert resolve_home(None, {"DAGSTER_HOME": str(other)}) == other.resolve()
    assert resolve_home(None, {}) == LOCAL_HOME


def test_ui_runs_dagster_dev_on_the_workspace_with_the_project_home() -> None:
    result = CliRunner().invoke(
        main, ["dagster", "ui", "--home", str(LOCAL_HOME), "--port", "3123", "--print-command"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"DAGSTER_HOME={LOCAL_HOME}"
    workspace = str(ROOT / "workspace.yaml")
    expected = [sys.executable, "-m", "dagster", "dev", "-w", workspace, "-h", "127.0.0.1"]
    # The report server the metadata links point to starts first, then the UI.
    assert lines[1].startswith(f"{sys.executable} -m datagouv_eval_pipeline.pipeline.report_site ")
    assert lines[2] == " ".join([*expected, "-p", "3123"])
    assert dev_command("127.0.0.1", 3123, Path("workspace.yaml"))[0] == sys.executable


def test_an_installed_wheel_gets_the_checkout_workspace_without_its_directory() -> None:
    checkout = yaml.safe_load((ROOT / "workspace.yaml").read_text(encoding="utf-8"))
    for entry in checkout["load_from"]:
        entry["python_module"].pop("working_directory")
    assert checkout == WHEEL_WORKSPACE


def test_ui_refuses_a_home_without_instance_config(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["dagster", "ui", "--home", str(tmp_path)])
    assert result.exit_code != 0
    assert f"{tmp_path.resolve()}: no dagster.yaml there" in result.output


# --- deploy instance (deploy/dagster.yaml) -----------------------------------------------------


def test_deploy_instance_config_passes_dagsters_schema(deploy_env: set[str]) -> None:
    assert deploy_env == {
        "DAGSTER_POSTGRES_HOST",
        "DAGSTER_POSTGRES_PORT",
        "DAGSTER_POSTGRES_DB",
        "DAGSTER_POSTGRES_USER",
        "DAGSTER_POSTGRES_PASSWORD",
    }
    config, _ = dagster_instance_config(str(DEPLOY))
    # The instance schema keeps `{env: NAME}`; Postgres storage resolves it like this.
    postgres = process_config(pg_config(), config["storage"]["postgres"])
    assert postgres.success, postgres.errors
    assert postgres.value is not None
    assert postgres.value["postgres_db"]["password"] == "placeholder-dagster_postgres_password"
    assert postgres.value["postgres_db"]["port"] == 5432
    # psycopg2 is the driver dagster-postgres installs (postgresql:// alone asks for psycopg 3).
    assert postgres.value["postgres_db"]["scheme"] == "postgresql+psycopg2"

    launcher = config["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_docker", "DockerRunLauncher")
    checked = process_config(
        DockerRunLauncher.config_type(),  # type: ignore[no-untyped-call]
        launcher["config"],
    )
    assert checked.success, checked.errors
    coordinator = config["run_coordinator"]
    assert (coordinator["module"], coordinator["class"]) == ("dagster", "QueuedRunCoordinator")
    checked = process_config(QueuedRunCoordinator.config_type(), coordinator["config"])
    assert checked.success, checked.errors


def test_deploy_config_fails_when_a_postgres_variable_is_missing(
    deploy_env: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_POSTGRES_PASSWORD")
    config, _ = dagster_instance_config(str(DEPLOY))
    postgres = process_config(pg_config(), config["storage"]["postgres"])
    assert not postgres.success
    assert postgres.errors is not None
    assert "DAGSTER_POSTGRES_PASSWORD" in " ".join(error.message for error in postgres.errors)


def test_deploy_instance_loads_with_the_docker_launcher(
    deploy_env: set[str], tmp_path: Path
) -> None:
    # Everything of the deploy instance but Postgres (no server here): SQLite under tmp_path.
    overrides = {
        "storage": {"sqlite": {"base_dir": str(tmp_path)}},
        "compute_logs": {
            "module": "dagster._core.storage.local_compute_log_manager",
            "class": "LocalComputeLogManager",
            "config": {"base_dir": str(tmp_path / "compute_logs")},
        },
    }
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(DEPLOY), overrides=overrides)
    with DagsterInstance.from_ref(ref) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, DockerRunLauncher)
        assert launcher.networks == ["datagouv_eval_network"]
        assert launcher.container_kwargs["volumes"] == ["datagouv_eval_data:/data"]
        assert "DATAGOUV_EVAL_DUCKDB" in launcher.env_vars
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        concurrency = instance.get_concurrency_config()
        assert concurrency.run_queue_config is not None
        assert concurrency.run_queue_config.max_concurrent_runs == 8
        assert instance.global_op_concurrency_default_limit == 1
        assert instance.run_retries_max_retries == 1
        assert instance.run_monitoring_max_resume_run_attempts == 0


def test_deploy_secrets_are_environment_references_only() -> None:
    config = _yaml(DEPLOY / "dagster.yaml")
    assert config["storage"]["postgres"]["postgres_db"]["password"] == {
        "env": "DAGSTER_POSTGRES_PASSWORD"
    }
    for name in config["run_launcher"]["config"]["env_vars"]:
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", name), f"{name!r}: names only, no NAME=value"


# --- workspace, image recipe, compose ---------------------------------------------------------


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        pending = ""
    assert not pending, "Dockerfile ends inside a continued line"
    return instructions


def _copy_sources() -> list[str]:
    sources: list[str] = []
    for keyword, arguments in _dockerfile():
        if keyword == "COPY":
            parts = [part for part in arguments.split() if not part.startswith("--")]
            assert len(parts) >= 2, arguments
            sources.extend(parts[:-1])
    return sources


def test_docker_workspace_points_at_the_code_location_grpc_server() -> None:
    (origin,) = location_origins_from_yaml_paths([str(DEPLOY / "workspace.docker.yaml")])
    assert isinstance(origin, GrpcServerCodeLocationOrigin)
    assert (origin.host, origin.port) == ("datagouv_eval_code", 4000)
    local = _yaml(ROOT / "workspace.yaml")["load_from"][0]["python_module"]
    assert origin.location_name == local["location_name"]


def test_dockerfile_builds_the_locked_environment_and_serves_the_definitions() -> None:
    instructions = _dockerfile()
    # The base is an argument (a registry image by default, an offline-built one for the check).
    assert instructions[0] == ("ARG", "BASE_IMAGE=python:3.11-slim")
    assert instructions[1] == ("FROM", "${BASE_IMAGE}")
    runs = " ".join(arguments for keyword, arguments in instructions if keyword == "RUN")
    assert "bubblewrap" in runs
    assert runs.count("uv sync --frozen --no-dev") == 2
    package = "dagster-dbt project prepare-and-package --file "
    assert package in runs
    dbt_project_file = runs.split(package)[1].split()[0]
    assert (ROOT / dbt_project_file).is_file(), dbt_project_file

    cmd = next(arguments for keyword, arguments in instructions if keyword == "CMD")
    argv: list[str] = yaml.safe_load(cmd)  # JSON exec form
    assert argv[:3] == ["dagster", "code-server", "start"]
    options = dict(zip(argv[3::2], argv[4::2], strict=True))
    local = _yaml(ROOT / "workspace.yaml")["load_from"][0]["python_module"]
    assert options["--module-name"] == local["module_name"]
    assert options["--location-name"] == local["location_name"]
    assert options["--port"] == "4000"
    module_file = ROOT / Path(*local["module_name"].split(".")).with_suffix(".py")
    assert module_file.is_file()


def test_dockerfile_copy_sources_exist_and_pass_the_dockerignore() -> None:
    sources = _copy_sources()
    assert "uv.lock" in sources and "deploy/dagster.yaml" in sources
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    included = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: no such file in the project"
        assert source.rstrip("/") in included, f"COPY {source}: excluded by the dockerignore"


def test_the_classic_builder_gets_the_same_small_context() -> None:
    # dockerd without BuildKit reads only the root .dockerignore; both files must agree.
    def rules(path: Path) -> list[str]:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [line for line in lines if line and not line.startswith("#")]

    assert rules(ROOT / ".dockerignore") == rules(DEPLOY / "Dockerfile.dockerignore")
    assert rules(ROOT / ".dockerignore")[0] == "**"


def test_dockerfile_installs_the_deploy_instance_where_dagster_home_points() -> None:
    instructions = _dockerfile()
    env = " ".join(arguments for keyword, arguments in instructions if keyword == "ENV")
    assert "DAGSTER_HOME=/opt/dagster/dagster_home" in env
    assert "DATAGOUV_EVAL_RUN_STORE=/data/runs" in env
    assert "DATAGOUV_EVAL_DUCKDB=/data/warehouse.duckdb" in env
    copies = [arguments for keyword, arguments in instructions if keyword == "COPY"]
    assert "deploy/dagster.yaml deploy/pools.yaml ${DAGSTER_HOME}/" in copies
    assert "deploy/workspace.docker.yaml ${DAGSTER_HOME}/workspace.yaml" in copies


def test_compose_wires_the_services_to_the_image_network_and_volume() -> None:
    compose = _yaml(DEPLOY / "docker-compose.yml")
    services = compose["services"]
    assert set(services) == {"postgres", "pools", "code", "webserver", "daemon"}

    build = services["pools"]["build"]
    assert (DEPLOY / build["context"]).resolve() == ROOT
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    image = services["pools"]["image"]
    for name in ("pools", "code", "webserver", "daemon"):
        assert services[name]["image"] == image, name
    assert services["code"]["environment"]["DAGSTER_CURRENT_IMAGE"] == image

    workspace = _yaml(DEPLOY / "workspace.docker.yaml")["load_from"][0]["grpc_server"]
    assert services["code"]["container_name"] == workspace["host"]
    assert str(workspace["port"]) in services["code"]["healthcheck"]["test"]
    for name in ("webserver", "daemon"):
        assert "/opt/dagster/dagster_home/workspace.yaml" in services[name]["command"], name
        assert "/var/run/docker.sock:/var/run/docker.sock" in services[name]["volumes"], name
    assert services["daemon"]["depends_on"]["pools"] == {
        "condition": "service_completed_successfully"
    }

    launcher = _yaml(DEPLOY / "dagster.yaml")["run_launcher"]["config"]
    assert compose["networks"][launcher["network"]]["name"] == launcher["network"]
    volume = launcher["container_kwargs"]["volumes"][0].split(":")[0]
    assert compose["volumes"][volume]["name"] == volume
    assert f"{volume}:/data" in services["code"]["volumes"]


def test_compose_gives_every_process_the_variables_the_instance_reads() -> None:
    compose = _yaml(DEPLOY / "docker-compose.yml")
    services = compose["services"]
    instance = _yaml(DEPLOY / "dagster.yaml")
    needed = _env_refs(instance)
    for name in ("pools", "code", "webserver", "daemon"):
        missing = needed - set(services[name]["environment"])
        assert not missing, f"service {name} lacks {sorted(missing)}"
    # DockerRunLauncher copies these from the daemon's environment and fails if one is unset.
    launcher_vars = set(instance["run_launcher"]["config"]["env_vars"])
    assert launcher_vars <= set(services["daemon"]["environment"])


def test_compose_holds_no_secret_values() -> None:
    compose = _yaml(DEPLOY / "docker-compose.yml")
    for service_name, service in compose["services"].items():
        for name, value in (service.get("environment") or {}).items():
            if SECRET_NAME.search(name):
                # ${NAME}, ${NAME:-} (empty default) or ${NAME:?message}: from the host only
                assert re.fullmatch(r"\$\{[A-Z0-9_]+(:-|:\?[^}]*)?\}", str(value)), (
                    f"{service_name}.{name} = {value!r} is not an environment reference"
                )


# --- deploy/check: the Kubernetes values and the warehouse comparison -------------------------


def _deploy_check() -> Any:
    spec = importlib.util.spec_from_file_location("deploy_check", DEPLOY / "check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_shipped_helm_values_pass_the_chart_keys_and_dagster_k8s() -> None:
    check = _deploy_check()
    values = yaml.safe_load((DEPLOY / "k8s" / "values.yaml").read_text(encoding="utf-8"))
    assert check.k8s_values_problems(values) == []
    rendered = check.k8s_launcher_config(values)
    assert rendered["env_secrets"] == ["datagouv-eval-model-keys"]
    assert rendered["run_k8s_config"]["container_config"]["securityContext"] == {
        "seccompProfile": {"type": "Unconfined"}
    }
    assert rendered["postgres_password_secret"] == "datagouv-eval-postgresql"


def test_the_helm_values_check_names_a_stray_key_and_a_wrong_type() -> None:
    check = _deploy_check()
    values = yaml.safe_load((DEPLOY / "k8s" / "values.yaml").read_text(encoding="utf-8"))
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    launcher["envVar"] = ["A=1"]  # misspelt
    launcher["runK8sConfig"]["podSpec"] = {}
    launcher["envVars"] = "DATAGOUV_EVAL_RUN_STORE=/data"  # a string, not a list
    problems = check.k8s_values_problems(values)
    assert "runLauncher.config.k8sRunLauncher.envVar: not a key the chart allows" in problems
    assert "runLauncher.config.k8sRunLauncher.runK8sConfig.podSpec: not allowed" in problems
    assert any(p.startswith("K8sRunLauncher config:") and "env_var" in p for p in problems)


def test_the_warehouse_comparison_ignores_clocks_and_ids_only(tmp_path: Path) -> None:
    import duckdb

    check = _deploy_check()

    def warehouse(name: str, accuracy: float, latency: float, run_id: str) -> Path:
        path = tmp_path / f"{name}.duckdb"
        with duckdb.connect(str(path)) as connection:
            connection.execute("CREATE SCHEMA eval")
            connection.execute(
                "CREATE TABLE eval.metrics (run_id VARCHAR, task_id VARCHAR, metric VARCHAR, "
                "value DOUBLE, loaded_at TIMESTAMP)"
            )
            connection.execute(
                "INSERT INTO eval.metrics VALUES (?, 't1', 'accuracy', ?, now()), "
                "(?, 't1', 'latency_ms', ?, now())",
                [run_id, accuracy, run_id, latency],
            )
        return path

    same = check.compare_warehouses(
        warehouse("a", 0.5, 10.0, "r1"), warehouse("b", 0.5, 99.0, "r2")
    )
    assert same == []
    differ = check.compare_warehouses(
        warehouse("c", 0.5, 10.0, "r1"), warehouse("d", 1.0, 10.0, "r1")
    )
    assert differ == ["eval.metrics: 1 rows vs 1, contents differ"]
