-- Every run of a cell x tier x mode is present, absent or unscored: exactly one of the three.
select cell_key, tier, mode, runs, present, absent, unscored
from {{ ref('failure_mode_counts') }}
where present + absent + unscored <> runs
