-- One row per run, with the cell's dimensions and the task's language. The task row is the one
-- with the run's spec hash; a run without it (a failed run is never scored) falls back to the
-- task's latest version; 'unknown' when the task is absent. task_spec_hash is that row's spec
-- hash (the version whose features stg_task_features lists for the run).
select
    r.*,
    c.model_kind,
    c.model_is_llm,
    coalesce(t.language, 'unknown') as language,
    t.expected_behaviour,
    t.spec_hash as task_spec_hash
from {{ source('eval', 'runs') }} as r
join {{ source('eval', 'cells') }} as c using (cell_key)
left join {{ source('eval', 'tasks') }} as t on t.task_id = r.task_id
qualify row_number() over (
    partition by r.run_id
    order by (t.spec_hash = r.spec_hash) desc nulls last, t.task_version desc nulls last
) = 1
