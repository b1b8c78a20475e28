"""Release check of the scale-out deployment on real engines (``deploy/check``; docs/deploy.md).

Each part starts what it needs on this machine, runs it for real and prints PASS, FAIL or
SKIP with the reason; the exit status is non-zero when a part failed (a skip is not a failure).

- ``postgres``: a PostgreSQL server (Debian's package) on 127.0.0.1, the Dagster instance of
  ``deploy/dagster.yaml`` (its storage section) on it; the default experiment runs there and its
  warehouse is compared, table by table, with the same experiment on the SQLite instance.
- ``docker``: one experiment run launched by ``DockerRunLauncher`` in a container of the project
  image, built on a base image made without any registry (debootstrap, ``docker import``).
- ``k8s``: the Helm values of ``deploy/k8s/values.yaml``: the run launcher's keys against those
  the Dagster chart allows, the launcher configuration the chart renders from them against
  ``dagster-k8s``'s own config schema, and, where ``helm`` is installed and the chart can be
  fetched, ``helm template`` against the chart's values schema. There is no cluster here: this
  is where the Kubernetes check stops.

Run it from the project root: ``deploy/check [postgres] [k8s] [--tasks IDS] [--keep]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"

# Columns that legitimately differ between two runs of the same experiment: ids and clocks.
VOLATILE_COLUMN = re.compile(
    r"(^|_)(run_id|experiment_id|dagster_run_id|id_run)$|_at$|^at$|_ms$|_seconds$|duration|"
    r"latency|timestamp|started|finished|created|loaded|^time$|wall|elapsed|dagster_home"
)

# Metrics measured by the clock (rows of the long tables, which name the metric in a column).
VOLATILE_METRIC = re.compile(r"latency|duration|_ms$|_seconds$|^time_|_time$")


@dataclass(frozen=True)
class Outcome:
    """What one part found."""

    part: str
    status: str  # PASS, FAIL or SKIP
    detail: str


def _log(message: str) -> None:
    print(f"[deploy/check] {message}", flush=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _postgres_bindir() -> Path | None:
    """Where PostgreSQL's server programs are (Debian: /usr/lib/postgresql/<major>/bin)."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), reverse=True)
    if candidates:
        return candidates[0].parent
    found = shutil.which("postgres")
    return Path(found).parent if found else None


def _install_postgres() -> str | None:
    """Install Debian's PostgreSQL as root; None when done, else why not."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "PostgreSQL is not installed and this is not a root Debian shell (apt-get)"
    _log("installing PostgreSQL with apt-get...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "postgresql"],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"apt-get could not install postgresql: {done.stderr.strip()[-300:]}"
    return None


def _as_postgres_user(command: list[str]) -> list[str]:
    # The server refuses to run as root; Debian's package creates the `postgres` user.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


@contextlib.contextmanager
def postgres_server(workdir: Path) -> Iterator[tuple[int, str]]:
    """Start a throw-away PostgreSQL cluster on 127.0.0.1; yield (port, database name)."""
    bindir = _postgres_bindir()
    if bindir is None:
        problem = _install_postgres()
        if problem is not None:
            raise _Skip(problem)
        bindir = _postgres_bindir()
        if bindir is None:
            raise _Skip("PostgreSQL was installed but its server programs were not found")
    data = workdir / "pgdata"
    data.mkdir(parents=True)
    sockets = workdir / "pgsocket"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres")
        shutil.chown(data, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()
    initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "dagster", "--auth=trust"]
    subprocess.run(_as_postgres_user(initdb), check=True, capture_output=True)
    options = f"-h 127.0.0.1 -p {port} -k {sockets}"
    start = [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-l"]
    start += [str(workdir / "postgres.log"), "start"]
    subprocess.run(_as_postgres_user(start), check=True, capture_output=True)
    try:
        create = [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "dagster"]
        subprocess.run([*create, "dagster"], check=True, capture_output=True)
        yield port, "dagster"
    finally:
        stop = [str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
        subprocess.run(_as_postgres_user(stop), check=False, capture_output=True)


class _Skip(Exception):
    """A part cannot run on this machine (the message says why)."""


def postgres_instance_yaml() -> dict[str, Any]:
    """The local instance settings with the scale-out deploy's storage section.

    The storage (and nothing else) comes from ``deploy/dagster.yaml``, so what is checked is the
    shipped configuration; runs stay local subprocesses (the Docker part launches containers).
    """
    local = yaml.safe_load((ROOT / "dagster_home" / "dagster.yaml").read_text(encoding="utf-8"))
    deployed = yaml.safe_load((DEPLOY / "dagster.yaml").read_text(encoding="utf-8"))
    return {**local, "storage": deployed["storage"]}


def run_experiment(
    home: Path, data: Path, env: dict[str, str], extra: Sequence[str]
) -> subprocess.CompletedProcess[str]:
    """Run ``datagouv-eval experiment`` with its own instance directory and data directory."""
    run_env = {
        **os.environ,
        **env,
        "DAGSTER_HOME": str(home),
        "DATAGOUV_EVAL_RUN_STORE": str(data / "run_store"),
        "DATAGOUV_EVAL_DUCKDB": str(data / "warehouse.duckdb"),
    }
    command = [str(Path(sys.executable).with_name("datagouv-eval")), "experiment", *extra]
    return subprocess.run(command, cwd=ROOT, env=run_env, capture_output=True, text=True)


def warehouse_tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Each table of the ``eval`` schema: its rows without volatile columns, sorted."""
    import duckdb

    tables: dict[str, list[tuple[Any, ...]]] = {}
    with duckdb.connect(str(path), read_only=True) as connection:
        names = connection.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'eval' AND table_type = 'BASE TABLE' ORDER BY 1"
        ).fetchall()
        for (name,) in names:
            columns = [
                row[0]
                for row in connection.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = 'eval' AND table_name = ? ORDER BY ordinal_position",
                    [name],
                ).fetchall()
                if not VOLATILE_COLUMN.search(row[0])
            ]
            if not columns:
                continue
            quoted = ", ".join(f'"{column}"' for column in columns)
            rows = connection.execute(f'SELECT {quoted} FROM eval."{name}"').fetchall()
            if "metric" in columns:  # long tables: clock metrics (latency_ms...) are rows
                at = columns.index("metric")
                rows = [row for row in rows if not VOLATILE_METRIC.search(str(row[at]))]
            tables[name] = sorted(rows, key=lambda row: json.dumps(row, default=str))
    return tables


def compare_warehouses(left: Path, right: Path) -> list[str]:
    """Differences between two warehouses, one line per table that differs (empty: same)."""
    a, b = warehouse_tables(left), warehouse_tables(right)
    problems = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            problems.append(
                f"eval.{name}: only in {'the SQLite' if name in b else 'the Postgres'} run"
            )
        elif a[name] != b[name]:
            problems.append(f"eval.{name}: {len(a[name])} rows vs {len(b[name])}, contents differ")
    return problems


def check_postgres(args: argparse.Namespace, workdir: Path) -> Outcome:
    """The default experiment on a Postgres-backed instance matches the SQLite run."""
    extra = ["--tasks", args.tasks] if args.tasks else []
    with postgres_server(workdir / "postgres") as (port, database):
        env = {
            "DAGSTER_POSTGRES_HOST": "127.0.0.1",
            "DAGSTER_POSTGRES_PORT": str(port),
            "DAGSTER_POSTGRES_DB": database,
            "DAGSTER_POSTGRES_USER": "dagster",
            "DAGSTER_POSTGRES_PASSWORD": "",
        }
        pg_home = workdir / "home-postgres"
        pg_home.mkdir()
        (pg_home / "dagster.yaml").write_text(yaml.safe_dump(postgres_instance_yaml()))
        shutil.copy(ROOT / "dagster_home" / "pools.yaml", pg_home / "pools.yaml")
        _log(f"PostgreSQL on 127.0.0.1:{port}; the experiment on it...")
        started = time.monotonic()
        on_postgres = run_experiment(pg_home, workdir / "data-postgres", env, extra)
        pg_seconds = time.monotonic() - started
        if on_postgres.returncode != 0:
            tail = (on_postgres.stdout + on_postgres.stderr).strip()[-1500:]
            return Outcome("postgres", "FAIL", f"the experiment failed on Postgres:\n{tail}")
        runs = subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "dagster", "-d", database, "-tAc",
             "SELECT status, count(*) FROM runs GROUP BY status ORDER BY 1"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        recorded = " ".join(runs.stdout.split()) or runs.stderr.strip()
    sqlite_home = workdir / "home-sqlite"
    sqlite_home.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", sqlite_home / "dagster.yaml")
    shutil.copy(ROOT / "dagster_home" / "pools.yaml", sqlite_home / "pools.yaml")
    _log("the same experiment on the SQLite instance...")
    started = time.monotonic()
    on_sqlite = run_experiment(sqlite_home, workdir / "data-sqlite", {}, extra)
    sqlite_seconds = time.monotonic() - started
    if on_sqlite.returncode != 0:
        tail = (on_sqlite.stdout + on_sqlite.stderr).strip()[-1500:]
        return Outcome("postgres", "FAIL", f"the reference SQLite run failed:\n{tail}")
    problems = compare_warehouses(
        workdir / "data-postgres" / "warehouse.duckdb", workdir / "data-sqlite" / "warehouse.duckdb"
    )
    tables = warehouse_tables(workdir / "data-postgres" / "warehouse.duckdb")
    summary = (
        f"runs in Postgres ({recorded}); experiment {pg_seconds:.0f} s on Postgres, "
        f"{sqlite_seconds:.0f} s on SQLite; {len(tables)} eval tables, "
        f"{sum(len(rows) for rows in tables.values())} rows compared"
    )
    if problems:
        return Outcome("postgres", "FAIL", summary + "\n" + "\n".join(problems))
    return Outcome("postgres", "PASS", summary + "; the warehouses match")


# Keys the Dagster chart's values schema allows in the run launcher's config (its
# K8sRunLauncherConfig and RunK8sConfig definitions forbid any other: a stray key fails the
# Helm install). Chart 1.13.x.
CHART_K8S_RUN_LAUNCHER_KEYS = frozenset(
    {
        "envConfigMaps", "envSecrets", "envVars", "failPodOnRunFailure", "image",
        "imagePullPolicy", "jobNamespace", "kubeconfigFile", "labels", "loadInclusterConfig",
        "resources", "runK8sConfig", "schedulerName", "securityContext", "volumeMounts",
        "volumes",
    }
)  # fmt: skip
CHART_RUN_K8S_CONFIG_KEYS = frozenset(
    {"containerConfig", "jobMetadata", "jobSpecConfig", "podSpecConfig", "podTemplateSpecMetadata"}
)
K8S_VALUES = DEPLOY / "k8s" / "values.yaml"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def k8s_launcher_config(values: dict[str, Any], release: str = "dagster") -> dict[str, Any]:
    """The ``K8sRunLauncher`` config the chart renders into the instance from ``values``.

    The chart adds what it owns (the instance config map, the PostgreSQL secret, the service
    account, its own env config map); the rest is the values' camelCase keys in snake_case.
    """
    chart = values["runLauncher"]["config"]["k8sRunLauncher"]
    secret = values.get("global", {}).get("postgresqlSecretName", f"{release}-postgresql-secret")
    rendered: dict[str, Any] = {
        "instance_config_map": f"{release}-instance",
        "postgres_password_secret": secret,
        "dagster_home": "/opt/dagster/dagster_home",
        "service_account_name": release,
        "env_config_maps": [f"{release}-pipeline-env"],
    }
    for key, value in chart.items():
        if key == "envSecrets":
            rendered["env_secrets"] = [item["name"] for item in value]
        elif key == "envConfigMaps":
            rendered["env_config_maps"] += [item["name"] for item in value]
        elif key == "runK8sConfig":
            rendered["run_k8s_config"] = {_snake(k): v for k, v in value.items()}
        elif key != "image":  # the chart resolves the image itself
            rendered[_snake(key)] = value
    return rendered


def k8s_values_problems(values: dict[str, Any]) -> list[str]:
    """What the chart's schema or dagster-k8s would refuse in ``values`` (empty: none)."""
    from dagster._config import process_config
    from dagster_k8s import K8sRunLauncher

    problems = []
    if values.get("runLauncher", {}).get("type") != "K8sRunLauncher":
        problems.append("runLauncher.type: expected K8sRunLauncher")
        return problems
    chart = values["runLauncher"].get("config", {}).get("k8sRunLauncher", {})
    for key in sorted(set(chart) - CHART_K8S_RUN_LAUNCHER_KEYS):
        problems.append(f"runLauncher.config.k8sRunLauncher.{key}: not a key the chart allows")
    for key in sorted(set(chart.get("runK8sConfig", {})) - CHART_RUN_K8S_CONFIG_KEYS):
        problems.append(f"runLauncher.config.k8sRunLauncher.runK8sConfig.{key}: not allowed")
    for index, deployment in enumerate(
        values.get("dagster-user-deployments", {}).get("deployments", [])
    ):
        for key in ("name", "image", "dagsterApiGrpcArgs", "port"):
            if key not in deployment:
                problems.append(f"dagster-user-deployments.deployments[{index}].{key}: missing")
    result = process_config(K8sRunLauncher.config_type(), k8s_launcher_config(values))
    if not result.success:
        problems += [f"K8sRunLauncher config: {error.message}" for error in result.errors or []]
    return problems


def check_k8s(_args: argparse.Namespace, workdir: Path) -> Outcome:
    """The Helm values pass the chart's launcher keys and dagster-k8s's launcher schema."""
    values = yaml.safe_load(K8S_VALUES.read_text(encoding="utf-8"))
    problems = k8s_values_problems(values)
    if problems:
        return Outcome("k8s", "FAIL", f"{K8S_VALUES.relative_to(ROOT)}:\n" + "\n".join(problems))
    detail = f"{K8S_VALUES.relative_to(ROOT)}: the launcher passes dagster-k8s's schema"
    helm = shutil.which("helm")
    if helm is None:
        detail += "; helm is not installed, so the whole file was not rendered against the chart"
    else:
        pulled = subprocess.run(
            [helm, "pull", "dagster", "--repo", "https://dagster-io.github.io/helm",
             "--version", "1.13.27", "--untar", "--untardir", str(workdir / "chart")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if pulled.returncode != 0:
            detail += f"; the chart could not be fetched ({pulled.stderr.strip()[-200:]})"
        else:
            chart_dir = str(workdir / "chart" / "dagster")
            rendered = subprocess.run(
                [helm, "template", "check", chart_dir, "-f", str(K8S_VALUES)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if rendered.returncode != 0:
                return Outcome("k8s", "FAIL", f"helm template: {rendered.stderr.strip()[-1500:]}")
            detail += "; helm template validated it against the chart's values schema"
    return Outcome("k8s", "PASS", detail + "; no cluster here: nothing was deployed")


BASE_IMAGE = "datagouv-eval-base:bookworm"
PROJECT_IMAGE = "datagouv-eval-pipeline:check"
DEBIAN_MIRROR = os.environ.get("DEPLOY_CHECK_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CHECK_LABEL = "datagouv-eval-check"


def _run(command: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, check=False, **kwargs)


def _apt_install(package: str) -> str | None:
    """Install one Debian package as root; None when done, else why not."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{package} is not installed and this is not a root Debian shell (apt-get)"
    _log(f"installing {package} with apt-get...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], env=env)
    done = _run(["apt-get", "install", "-y", "-qq", package], env=env)
    return None if done.returncode == 0 else f"apt-get install {package}: {done.stderr[-300:]}"


def docker_engine(workdir: Path) -> None:
    """Make sure a Docker engine answers: start Debian's dockerd when it is installable."""
    if _run(["docker", "info"]).returncode == 0 if shutil.which("docker") else False:
        return
    if shutil.which("dockerd") is None:
        problem = _apt_install("docker.io")
        if problem is not None:
            raise _Skip(f"no Docker engine: {problem}")
    if os.geteuid() != 0:
        raise _Skip("no Docker engine answers, and starting dockerd needs root")
    _log("starting dockerd...")
    log = (workdir / "dockerd.log").open("w")
    subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if _run(["docker", "info"]).returncode == 0:
            return
        time.sleep(1)
    raise _Skip(f"dockerd did not start: {(workdir / 'dockerd.log').read_text()[-500:]}")


def base_image(workdir: Path) -> str:
    """A Debian bookworm base image made without any registry (debootstrap, docker import)."""
    if _run(["docker", "image", "inspect", BASE_IMAGE]).returncode == 0:
        return f"{BASE_IMAGE} (cached)"
    if shutil.which("debootstrap") is None:
        problem = _apt_install("debootstrap")
        if problem is not None:
            raise _Skip(f"cannot build a base image: {problem}")
    rootfs = workdir / "rootfs"
    _log(f"debootstrap of Debian bookworm from {DEBIAN_MIRROR}...")
    packages = "python3,python3-pip,python3-venv,ca-certificates,bubblewrap"
    done = _run(
        ["debootstrap", "--variant=minbase", f"--include={packages}", "bookworm", str(rootfs),
         DEBIAN_MIRROR],
    )  # fmt: skip
    if done.returncode != 0:
        raise _Skip(f"debootstrap failed (no Debian mirror?): {done.stdout[-400:]}")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(
        ["docker", "import", "-", BASE_IMAGE], stdin=tar.stdout, capture_output=True, check=False
    )
    tar.wait()
    shutil.rmtree(rootfs, ignore_errors=True)
    if imported.returncode != 0:
        raise RuntimeError(f"docker import: {imported.stderr.decode(errors='replace')[-400:]}")
    return f"{BASE_IMAGE} (debootstrap + docker import)"


def project_image() -> str:
    """Build deploy/Dockerfile on the offline base; the packages come from the package index."""
    sha = _run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT).stdout.strip() or "unknown"
    started = time.monotonic()
    # This machine's extra authorities (a TLS-inspecting proxy to the package index, say) are
    # trusted by the image while it builds; they never stay in the project.
    authorities = DEPLOY / "ca-certificates"
    copied = []
    for certificate in Path("/usr/local/share/ca-certificates").glob("*.crt"):
        shutil.copy(certificate, authorities / certificate.name)
        copied.append(authorities / certificate.name)
    try:
        built = _build_image(sha)
    finally:
        for path in copied:
            path.unlink(missing_ok=True)
    if built.returncode != 0:
        raise RuntimeError(f"docker build failed:\n{(built.stdout + built.stderr)[-2000:]}")
    context = re.search(r"Sending build context to Docker daemon\s+(\S+\s*\S*B)", built.stdout)
    size = _run(["docker", "image", "inspect", "-f", "{{.Size}}", PROJECT_IMAGE]).stdout.strip()
    megabytes = int(size) // 1_000_000 if size.isdigit() else "?"
    return (
        f"image built in {time.monotonic() - started:.0f} s, context "
        f"{context.group(1) if context else '?'}, image {megabytes} MB"
    )


def _build_image(sha: str) -> subprocess.CompletedProcess[str]:
    return _run(
        ["docker", "build", "--network", "host", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
         "--build-arg", f"DATAGOUV_EVAL_GIT_SHA={sha}", "-f", "deploy/Dockerfile",
         "-t", PROJECT_IMAGE, "."],
        cwd=ROOT, env={**os.environ, "DOCKER_BUILDKIT": "0"},
    )  # fmt: skip


def check_docker(args: argparse.Namespace, workdir: Path) -> Outcome:
    """One experiment run launched by ``DockerRunLauncher`` in a container of the project image.

    The code location runs in a container too (the image's default command), the instance is on
    a real PostgreSQL, the run store and warehouse on a host directory mounted at ``/data`` in
    every container (the shared volume of the compose file).
    """
    docker_engine(workdir)
    base = base_image(workdir)
    _log("building the project image...")
    image = project_image()
    data = workdir / "docker-data"
    (data / "runs").mkdir(parents=True)
    (data / "dagster").mkdir()
    (data / "cache").mkdir()
    for path in (data, data / "runs", data / "dagster", data / "cache"):
        path.chmod(0o777)  # the image's `dagster` user writes there
    code_port = _free_port()
    with postgres_server(workdir / "postgres-docker") as (port, database):
        env = {
            "DAGSTER_POSTGRES_HOST": "127.0.0.1",
            "DAGSTER_POSTGRES_PORT": str(port),
            "DAGSTER_POSTGRES_DB": database,
            "DAGSTER_POSTGRES_USER": "dagster",
            "DAGSTER_POSTGRES_PASSWORD": "",
        }
        code = _run(
            ["docker", "run", "-d", "--network", "host", "--label", CHECK_LABEL,
             *[f"--env={key}={value}" for key, value in env.items()],
             PROJECT_IMAGE, "dagster", "code-server", "start", "--host", "127.0.0.1",
             "--port", str(code_port), "--module-name", "datagouv_eval_pipeline.definitions",
             "--location-name", "datagouv_eval_pipeline", "--working-directory",
             "/opt/dagster/app"],
        )  # fmt: skip
        if code.returncode != 0:
            return Outcome("docker", "FAIL", f"code location container: {code.stderr[-500:]}")
        code_container = code.stdout.strip()
        try:
            return _launch_in_containers(args, workdir, env, code_port, data, f"{base}; {image}")
        finally:
            _run(["docker", "rm", "-f", code_container])


def _launch_in_containers(
    args: argparse.Namespace,
    workdir: Path,
    env: dict[str, str],
    code_port: int,
    data: Path,
    built: str,
) -> Outcome:
    home = workdir / "home-docker"
    home.mkdir()
    home.chmod(0o777)
    deployed = yaml.safe_load((DEPLOY / "dagster.yaml").read_text(encoding="utf-8"))
    launcher = deployed["run_launcher"]
    launcher["config"] = {
        "image": PROJECT_IMAGE,
        "network": "host",  # the check's PostgreSQL and code server listen on 127.0.0.1
        "env_vars": sorted(env),
        "container_kwargs": {
            **launcher["config"]["container_kwargs"],
            "volumes": [f"{data}:/data"],
            "labels": {"app": "datagouv-eval-pipeline", CHECK_LABEL: "run"},
        },
    }
    instance = {
        "storage": deployed["storage"],
        "run_launcher": launcher,
        # Launched at once (the compose deploy queues runs for its daemon; none runs here).
        "run_coordinator": {
            "module": "dagster._core.run_coordinator",
            "class": "DefaultRunCoordinator",
        },
        "telemetry": {"enabled": False},
    }
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance), encoding="utf-8")
    workspace = workdir / "workspace.check.yaml"
    workspace.write_text(
        yaml.safe_dump(
            {"load_from": [{"grpc_server": {"host": "127.0.0.1", "port": code_port,
                                            "location_name": "datagouv_eval_pipeline"}}]}
        ),
        encoding="utf-8",
    )  # fmt: skip
    from datagouv_eval_pipeline.defs.partitions import CELLS

    settings: dict[str, Any] = {"task_ids": args.tasks.split(",")} if args.tasks else {}
    config = {
        "resources": {
            "experiment": {"config": settings},
            "catalog": {"config": {"live": False}},
            "judge": {"config": {}},
        }
    }
    tags = {
        "dagster/asset_partition_range_start": CELLS[0].key,
        "dagster/asset_partition_range_end": CELLS[-1].key,
    }
    run_env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    from datagouv_eval_pipeline.defs.partitions import register_cells

    os.environ.update(env)  # the instance's storage reads the PostgreSQL variables
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as dagster_instance:
        register_cells(dagster_instance, [cell.key for cell in CELLS])  # every cell, as before
    deadline = time.monotonic() + 120
    while True:  # the code server needs a while to load the definitions
        launched = _run(
            [str(Path(sys.executable).with_name("dagster")), "job", "launch", "-w", str(workspace),
             "-j", "experiment", "--config-json", json.dumps(config), "--tags", json.dumps(tags)],
            env=run_env, cwd=workdir,
        )  # fmt: skip
        if launched.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(5)
    if launched.returncode != 0:
        return Outcome("docker", "FAIL", f"dagster job launch:\n{launched.stderr[-1500:]}")
    _log("run launched; waiting for its container...")
    started = time.monotonic()
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as dagster_instance:
        (run,) = dagster_instance.get_runs(limit=1)
        while not run.is_finished and time.monotonic() - started < 3600:
            time.sleep(5)
            run = dagster_instance.get_run_by_id(run.run_id) or run
        status = run.status.value
        run_id = run.run_id
    containers = _run(
        ["docker", "ps", "-a", "--filter", f"label={CHECK_LABEL}=run", "--format",
         "{{.ID}} {{.Status}}"],
    ).stdout.strip()  # fmt: skip
    warehouse = data / "warehouse.duckdb"
    rows, code_runs, sandbox_skips = 0, 0, 0
    if warehouse.exists():
        import duckdb

        with duckdb.connect(str(warehouse), read_only=True) as connection:
            rows = int(connection.execute("SELECT count(*) FROM eval.metrics").fetchone()[0])  # type: ignore[index]
            code_runs, sandbox_skips = connection.execute(
                "SELECT count(*), count(*) FILTER (WHERE status = 'skipped' "
                "AND status_reason LIKE '%sandbox%') FROM eval.runs "
                "WHERE capability_set LIKE '%code%'"
            ).fetchone()  # type: ignore[misc]
    summary = (
        f"{built}; run {run_id[:8]} {status} in {time.monotonic() - started:.0f} s in container "
        f"[{containers}]; eval.metrics has {rows} rows in the shared /data; "
        f"{code_runs - sandbox_skips} of {code_runs} code runs had their sandbox in the container"
    )
    if status != "SUCCESS" or rows == 0:
        logs = (
            _run(["docker", "logs", "--tail", "40", containers.split()[0]]) if containers else None
        )
        tail = (logs.stdout + logs.stderr)[-1500:] if logs else ""
        return Outcome("docker", "FAIL", summary + "\n" + tail)
    return Outcome("docker", "PASS", summary)


PARTS = {"postgres": check_postgres, "docker": check_docker, "k8s": check_k8s}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts (all by default) and print one line per part."""
    parser = argparse.ArgumentParser(prog="deploy/check", description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", help=f"which parts: {', '.join(PARTS)} (default: all)")
    parser.add_argument("--tasks", help="only these task ids (comma-separated), for a quick check")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    args = parser.parse_args(argv)
    unknown = [part for part in args.parts if part not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; expected {', '.join(PARTS)}")
    workdir = Path(tempfile.mkdtemp(prefix="deploy-check-"))
    workdir.chmod(0o755)  # the PostgreSQL server's own user must reach its data directory
    outcomes: list[Outcome] = []
    try:
        for part in args.parts or list(PARTS):
            _log(f"{part}...")
            try:
                outcome = PARTS[part](args, workdir)
            except _Skip as skip:
                outcome = Outcome(part, "SKIP", str(skip))
            except (subprocess.CalledProcessError, OSError, RuntimeError) as error:
                stderr = getattr(error, "stderr", b"") or b""
                text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
                outcome = Outcome(part, "FAIL", f"{error} {text.strip()[-500:]}")
            outcomes.append(outcome)
            print(f"{outcome.status} {outcome.part}: {outcome.detail}", flush=True)
    finally:
        if args.keep:
            _log(f"working directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 1 if any(outcome.status == "FAIL" for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
