-- One row per run x tier x metric, with the run's dimensions for grouping.
select
    m.run_id,
    m.cell_key,
    m.task_id,
    m.repeat_index,
    m.tier,
    m.metric,
    m.value,
    m.reason,
    m.aggregation,
    m.bounded,
    m.source,
    r.status,
    r.model_provider,
    r.model_name,
    r.capability_set,
    r.mcp_version,
    r.skills_version,
    r.system_prompt,
    r.language
from {{ source('eval', 'metrics') }} as m
join {{ ref('stg_runs') }} as r using (run_id)
