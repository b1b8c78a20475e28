"""Runs executed in the command's own process, recorded as runs of the UI's code location.

``datagouv-eval experiment`` executes its jobs in process (``execute_in_process``), on the
instance the UI reads. Such a run has no code location origin, and the UI's Overview timeline
leaves out every run without one (it groups runs by location and job). Inside
:func:`as_code_location_runs`, the runs the instance creates name the workspace's code location
(``workspace.yaml``: location ``datagouv_eval_pipeline``, Dagster's single repository
``__repository__``), so they show in the timeline and on the job's page like launched runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dagster as dg
from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME
from dagster._core.remote_origin import (
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)

LOCATION_NAME = "datagouv_eval_pipeline"
"""The code location's name in ``workspace.yaml`` (and the wheel's generated workspace)."""


def job_origin(job_name: str, location: str = LOCATION_NAME) -> RemoteJobOrigin:
    """The origin of ``job_name`` in the code location ``location``."""
    repository = RemoteRepositoryOrigin(
        RegisteredCodeLocationOrigin(location), SINGLETON_REPOSITORY_NAME
    )
    return RemoteJobOrigin(repository, job_name)


@contextmanager
def as_code_location_runs(
    instance: dg.DagsterInstance, location: str = LOCATION_NAME
) -> Iterator[None]:
    """Within this block, runs ``instance`` creates for a job carry the location's origin."""
    create = instance.create_run_for_job

    def create_with_origin(job_def: dg.JobDefinition, **kwargs: Any) -> Any:
        if kwargs.get("remote_job_origin") is None:
            kwargs["remote_job_origin"] = job_origin(job_def.name, location)
        return create(job_def, **kwargs)

    instance.create_run_for_job = create_with_origin  # type: ignore[method-assign]
    try:
        yield
    finally:
        del instance.create_run_for_job  # back to the class's method
