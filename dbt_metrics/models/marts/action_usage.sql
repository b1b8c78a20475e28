-- Per cell x semantic action: instances, runs using it, and the share that errored. The
-- cross-toolset view of behaviour: the same action reached through MCP tools or through code.
select
    a.cell_key,
    any_value(r.model_name) as model_name,
    any_value(r.capability_set) as capability_set,
    any_value(r.mcp_version) as mcp_version,
    a.action,
    count(*) as instances,
    count(distinct a.run_id) as runs_using,
    count(*) filter (where a.errored) as errored,
    count(*) filter (where a.errored) / count(*) as error_rate,
    avg(a.confidence) as avg_confidence
from {{ source('eval', 'action_instances') }} as a
join {{ ref('stg_runs') }} as r using (run_id)
group by a.cell_key, a.action
