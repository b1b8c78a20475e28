-- Per cell x tier x failure mode: runs where the mode is present, absent, unscored, or not
-- applicable (e.g. TOOL_OMISSION without any tool); coverage counts only the runs it applies to.
select
    cell_key,
    tier,
    mode,
    count(*) as runs,
    count(*) filter (where present) as present,
    count(*) filter (where not present) as absent,
    count(*) filter (where present is null and status <> 'not_applicable') as unscored,
    count(*) filter (where status = 'not_applicable') as not_applicable,
    count(present) / nullif(count(*) filter (where status <> 'not_applicable'), 0) as coverage
from {{ source('eval', 'failure_modes') }}
group by cell_key, tier, mode
