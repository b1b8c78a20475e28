"""``datagouv-eval review``: the review loop of an experiment.

``review sample`` draws a blind, stratified sample of the latest experiment from the warehouse
into a YAML file to label (nothing of the judge's verdicts in it); ``review import`` looks the
judge's verdicts up, stores the labels with who labelled them in the warehouse
(``eval.review_labels``), adds the verdict labels to the calibration set (a new version-2 file
in ``task_specs/calibration/``, method ``blind-review``) and turns each failed answer into a
draft task.
"""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, datetime
from pathlib import Path

import click


def _db(db_path: Path | None) -> Path:
    from datagouv_eval_pipeline.pipeline.warehouse import default_duckdb_path

    return db_path or Path(default_duckdb_path())


_DB_OPTION = click.option(
    "--warehouse",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="DuckDB file [default: $DATAGOUV_EVAL_DUCKDB or data/warehouse.duckdb].",
)


@click.group()
def command() -> None:
    """Blind review: draw a sample of an experiment, import the labels."""


@command.command("sample")
@_DB_OPTION
@click.option("--experiment", "experiment_id", help="Experiment id [default: the latest].")
@click.option("--runs", default=16, show_default=True, help="Runs drawn (over the strata).")
@click.option("--seed", default=0, show_default=True, help="Seed of the draw.")
@click.option(
    "--out",
    "out_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The YAML file to fill in.",
)
def sample_command(
    db_path: Path | None, experiment_id: str | None, runs: int, seed: int, out_path: Path
) -> None:
    """Draw a blind, stratified sample of an experiment's runs to label.

    Outcome strata by the automated checks and decided criteria a run failed: passed (none),
    near_miss (one), failed (two or more), sharing the sample equally; within each, round-robin
    over capability set x expected behaviour. The file shows nothing of the judge's verdicts.
    Each run asks the rubric of the answer and verdict labels of every kind (criteria,
    arguments, trajectory, failure modes) in both tiers.
    """
    import duckdb

    from datagouv_eval_pipeline.cli.experiment_summary import EXIT_INTERRUPTED
    from datagouv_eval_pipeline.cli.judge import _tasks
    from datagouv_eval_pipeline.pipeline.warehouse import (
        QueryInterrupted,
        ReviewError,
        draw_sample,
        run_interruptibly,
        write_review,
    )

    db = _db(db_path)
    if not db.exists():
        raise click.ClickException(f"{db}: no warehouse yet; run `datagouv-eval experiment` first")
    tasks = _tasks(None)
    try:
        with duckdb.connect(str(db), read_only=True) as conn:
            review = run_interruptibly(
                conn,
                lambda c: draw_sample(c, tasks, runs=runs, seed=seed, experiment_id=experiment_id),
            )
    except QueryInterrupted as stopped:
        click.echo(str(stopped), err=True)
        sys.exit(EXIT_INTERRUPTED)
    except duckdb.Error as error:
        raise click.ClickException(f"{db}: cannot read the warehouse: {error}") from error
    except ReviewError as error:
        raise click.ClickException(f"{db}: {error}") from error
    write_review(review, out_path)
    labels = sum(len(s.labels) for s in review.samples)
    kinds = sorted({label.verdict_kind for s in review.samples for label in s.labels})
    strata = ", ".join(f"{name} {s.drawn} of {s.runs}" for name, s in review.strata.items())
    click.echo(
        f"wrote {len(review.samples)} runs of experiment {review.experiment_id} (drawn per "
        f"outcome: {strata}) with {labels} blind verdict labels ({', '.join(kinds)}) to "
        f"{out_path}"
    )


@command.command("import")
@click.argument("review_path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_DB_OPTION
@click.option(
    "--calibration-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the new calibration file goes [default: task_specs/calibration].",
)
@click.option(
    "--task-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the draft tasks go [default: task_specs].",
)
@click.option(
    "--labeller",
    default=None,
    help="Who labelled (a name or an email) [default: the file's `labeller`; required].",
)
@click.option(
    "--human/--not-human",
    "human",
    default=None,
    help="Whether a person labelled [default: the file's `human`; required].",
)
def import_command(
    review_path: Path,
    db_path: Path | None,
    calibration_dir: Path | None,
    task_dir: Path | None,
    labeller: str | None,
    human: bool | None,
) -> None:
    """Store a filled-in review: labels, calibration items and draft tasks.

    The judge's verdict on each label is looked up now, in the warehouse. Writes
    eval.review_labels (replacing an earlier import of the same file), a version-2 calibration
    file named after the review file (method blind-review, with the labeller), and one draft
    task per run whose rubric has a fail. The draft tasks must pass `datagouv-eval validate`;
    nothing is written otherwise.
    """
    import duckdb

    from datagouv_eval_pipeline.cli.experiment_summary import EXIT_INTERRUPTED
    from datagouv_eval_pipeline.cli.judge import _tasks
    from datagouv_eval_pipeline.core.judges import (
        CALIBRATION_DIR,
        CalibrationError,
        load_calibration,
    )
    from datagouv_eval_pipeline.core.tasks import TASK_SPECS_DIR, TaskSpecErrors, load_task_specs
    from datagouv_eval_pipeline.pipeline.warehouse import (
        QueryInterrupted,
        ReviewError,
        SchemaVersionError,
        calibration_document,
        check_review,
        connect,
        draft_tasks,
        judge_outcomes,
        label_rows,
        read_review,
        run_interruptibly,
        write_calibration_file,
        write_review_labels,
    )

    tasks = _tasks(task_dir)
    try:
        review = read_review(review_path)
        if labeller is not None:
            review.labeller = labeller
        if human is not None:
            review.human = human
        check_review(review, tasks, review_path)
        try:
            review.provenance()
        except ReviewError as error:
            raise ReviewError(
                "\n".join(f"{review_path}: {line}" for line in str(error).splitlines())
            ) from None
    except ReviewError as error:
        raise click.ClickException(str(error)) from error
    db = _db(db_path)
    if not db.exists():
        raise click.ClickException(
            f"{db}: no warehouse: the judge's verdicts are looked up there at import "
            "(give the warehouse the sample was drawn from with --warehouse)"
        )
    try:
        with duckdb.connect(str(db), read_only=True) as conn:
            outcomes = run_interruptibly(conn, lambda c: judge_outcomes(c, review))
    except QueryInterrupted as stopped:
        click.echo(str(stopped), err=True)
        sys.exit(EXIT_INTERRUPTED)
    except duckdb.Error as error:
        raise click.ClickException(f"{db}: cannot read the judge's verdicts: {error}") from error
    digest = hashlib.sha256(review_path.read_bytes()).hexdigest()[:12]
    review_id = f"{review_path.name}@{digest}"
    rows = label_rows(review, review_id, imported_at=datetime.now(UTC), outcomes=outcomes)

    # Everything is prepared and checked before anything is written.
    target_dir = calibration_dir or CALIBRATION_DIR
    calibration_path = target_dir / f"{review_path.stem}.yml"
    document = calibration_document(review, review_path.name, outcomes)
    if document is not None and calibration_path.exists():
        raise click.ClickException(
            f"{calibration_path} exists: this review was imported already (rename the "
            "review file to import it as a new calibration version)"
        )
    drafts_dir = task_dir or TASK_SPECS_DIR
    drafts = draft_tasks(review, drafts_dir, source=review_path.name)
    written: list[Path] = []
    try:
        for path, text in drafts:
            path.write_text(text, encoding="utf-8")
            written.append(path)
        load_task_specs([drafts_dir])
    except (TaskSpecErrors, OSError) as error:
        for path in written:
            path.unlink(missing_ok=True)
        raise click.ClickException(f"the draft tasks do not validate: {error}") from error
    if document is not None:
        write_calibration_file(document, calibration_path, source=review_path.name)
        try:
            load_calibration([calibration_path], _tasks(task_dir))
        except CalibrationError as error:
            calibration_path.unlink(missing_ok=True)
            for path in written:
                path.unlink(missing_ok=True)
            raise click.ClickException(str(error)) from error
    try:
        with connect(db) as conn:
            write_review_labels(conn, rows)
    except (duckdb.Error, SchemaVersionError, OSError) as error:
        raise click.ClickException(f"{db}: cannot store the labels: {error}") from error
    items = 0 if document is None else len(document.items)
    missing = sum(1 for row in rows if row.label_kind != "rubric" and row.automated is None)
    click.echo(
        f"stored {len(rows)} label(s) by {review.labeller.strip()} in {db} (eval.review_labels)"
        + (f"; {missing} verdict(s) no longer in the warehouse" if missing else "")
    )
    click.echo(
        f"added {items} calibration item(s)"
        + (f" in {calibration_path}" if document is not None else "")
    )
    click.echo(
        f"wrote {len(drafts)} draft task(s)"
        + (f": {', '.join(p.name for p, _ in drafts)}" if drafts else "")
    )
