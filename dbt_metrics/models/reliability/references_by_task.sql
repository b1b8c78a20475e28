-- Per task x expected value x reference: the number answers were compared with, and where it
-- came from (recomputed from the run's catalog, or the task spec), with the runs that used it.
select
    task_id,
    name,
    spec_value,
    value,
    source,
    recomputed,
    changed,
    any_value(error) as error,
    count(*) as runs,
    count(found) as runs_stating_it
from {{ source('eval', 'references') }}
group by task_id, name, spec_value, value, source, recomputed, changed
