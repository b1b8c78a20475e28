-- Per cell x tier x failure mode: runs where the mode is present, absent, or unscored.
select
    cell_key,
    tier,
    mode,
    count(*) as runs,
    count(*) filter (where present) as present,
    count(*) filter (where not present) as absent,
    count(*) filter (where present is null) as unscored,
    count(present) / count(*) as coverage
from {{ source('eval', 'failure_modes') }}
group by cell_key, tier, mode
