-- The status counts of a cell partition its runs (ok, error, budget_exceeded, skipped).
select cell_key, tier, runs, runs_ok, runs_error, runs_budget_exceeded, runs_skipped
from {{ ref('experiment_summary') }}
where runs_ok + runs_error + runs_budget_exceeded + runs_skipped <> runs
