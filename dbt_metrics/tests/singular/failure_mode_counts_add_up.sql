-- Every run of a cell x tier x mode is present, absent, unscored or not applicable: exactly one.
select cell_key, tier, mode, runs, present, absent, unscored, not_applicable
from {{ ref('failure_mode_counts') }}
where present + absent + unscored + not_applicable <> runs
