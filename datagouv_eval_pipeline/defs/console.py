"""The ``brief`` logger: what ``datagouv-eval experiment`` prints while the run goes.

Dagster's console logger prints every framework event (step start, output, materialization,
pool waits), about 400 lines for the default experiment. This one prints only what a person
follows: the messages of our own assets at INFO and above (one progress line per cell), a
failed step's root cause in at most three lines without its stack, a stopped step as
"stopped", and warnings. Everything still goes to the
instance's event log, so the UI shows the full story.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

import dagster as dg

# dagster-dbt's own INFO chatter; the dbt asset logs its one-line summary instead.
_QUIET_STEP_PREFIXES = (
    "A dbt subsetted execution",
    "Copying `",
    "Running dbt command",
    "Finished dbt command",
)
# dagster-dbt explains, once per relationships test, that it is an observation: not actionable.
_SKIPPED_STEP = ". Not executing."
_QUIET_WARNINGS = ("Logging an `AssetObservation` instead of an `AssetCheckResult`",)


_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] ")
_BAR_WIDTH = 20


def progress_bar(done: int, total: int, width: int = _BAR_WIDTH) -> str:
    """A text bar of ``done`` out of ``total`` (``███████░░░``)."""
    filled = round(width * done / total) if total else width
    return "█" * filled + "░" * (width - filled)


class BriefFormatter(logging.Formatter):
    """``HH:MM:SS step: message``; failures by their cause, framework events dropped.

    On a terminal, per-cell progress lines (``[7/24] cell …``) start with a progress bar.
    """

    def __init__(self, *, tty: bool = False) -> None:
        """A formatter; ``tty`` draws progress bars."""
        super().__init__()
        self._tty = tty

    def format(self, record: logging.LogRecord) -> str:
        """Render one record (the filter has already dropped what is not shown)."""
        meta: dict[str, Any] = getattr(record, "dagster_meta", {}) or {}
        step = meta.get("step_key") or "run"
        message = str(meta.get("orig_message", record.getMessage()))
        event = meta.get("dagster_event")
        if event is not None and event.is_step_failure:
            error = getattr(event.step_failure_data, "error", None)
            if _is_interrupt(event):
                message = f"stopped: {failure_text(error) or 'interrupted'}"
            else:
                message = f"failed: {failure_text(error)}"
        when = self.formatTime(record, "%H:%M:%S")
        progress = _PROGRESS.match(message) if self._tty else None
        if progress is not None:
            bar = progress_bar(int(progress.group(1)), int(progress.group(2)))
            return f"{when} {step}: {bar} {message}"
        return f"{when} {step}: {message}"


_MAX_CAUSE_LINES = 3
_WRAPPERS = ("DagsterUserCodeExecutionError", "DagsterExecutionStepExecutionError")


def failure_text(error: Any) -> str:
    """A failed step's cause in at most three lines, from Dagster's serialized error.

    Dagster wraps what a step raised ("Error occurred while executing op …"); the wrapper says
    nothing, so the chain is followed to its root: its message (which names the file and the
    field for our errors) is what a person acts on. A message of its own above the root (a
    ``Failure``'s description) comes first.
    """
    if error is None:
        return "see the Dagster UI"
    chain = []
    seen: set[int] = set()
    link = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        chain.append(link)
        link = getattr(link, "cause", None) or getattr(link, "context", None)
    told = [_message(link) for link in chain if getattr(link, "cls_name", "") not in _WRAPPERS]
    told = [text for text in told if text]
    if not told:
        return _message(chain[0]) or str(getattr(chain[0], "cls_name", "")) or "see the Dagster UI"
    lines = told[-1].splitlines()
    if len(told) > 1 and told[0] != told[-1]:
        lines = [told[0].splitlines()[0], *lines]
    lines = [line.strip() for line in lines if line.strip()]
    if len(lines) > _MAX_CAUSE_LINES:
        lines = [*lines[: _MAX_CAUSE_LINES - 1], lines[-1]]
    return "\n  ".join(lines)


def _message(error: Any) -> str:
    text = str(getattr(error, "message", "") or "").strip()
    first, _, rest = text.partition("\n")
    # "dagster._core.definitions.events.Failure: why" → "why"; "duckdb.IOException: x" →
    # "IOException: x"; a builtin's name stays ("UnicodeDecodeError: …").
    head, sep, tail = first.partition(": ")
    if sep and "." in head and " " not in head:
        name = head.rsplit(".", 1)[1]
        first = tail if head.startswith("dagster") else f"{name}: {tail}"
    elif not sep and "." in first and " " not in first:  # a bare class name, no message
        name = first.rsplit(".", 1)[1]
        first = "" if name == "DagsterExecutionInterruptedError" else name
    return (first + ("\n" + rest if rest else "")).strip()


def _is_interrupt(event: Any) -> bool:
    data = event.step_failure_data
    source = getattr(getattr(data, "error_source", None), "value", "")
    return source == "INTERRUPT"


def keep_record(record: logging.LogRecord) -> bool:
    """Whether the brief console shows a record."""
    meta: dict[str, Any] = getattr(record, "dagster_meta", {}) or {}
    event = meta.get("dagster_event")
    message = str(meta.get("orig_message", record.getMessage()))
    if event is not None:
        return bool(event.is_step_failure)
    if message.endswith(_SKIPPED_STEP):  # one per step below a failure; the failure is shown
        return False
    if record.levelno >= logging.WARNING:
        return not message.startswith(_QUIET_WARNINGS)
    return not message.startswith(_QUIET_STEP_PREFIXES)


@dg.logger(
    {"log_level": dg.Field(str, is_required=False, default_value="INFO")},
    description="Short console output for `datagouv-eval experiment` (progress, failures).",
)
def brief_console_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    """A console logger that prints progress and failures, one line each."""
    logger = logging.Logger("datagouv_eval.brief", level=init_context.logger_config["log_level"])
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(BriefFormatter(tty=sys.stderr.isatty()))
    handler.addFilter(keep_record)
    logger.addHandler(handler)
    return logger
