-- Per cell x literal tool: how often it was called, by how many runs, how often it failed, and
-- how much of it the semantic layer could map. error_rate is NULL-free (calls > 0 by grain).
select
    t.cell_key,
    any_value(r.model_name) as model_name,
    any_value(r.capability_set) as capability_set,
    any_value(r.mcp_version) as mcp_version,
    t.tool_name,
    count(*) as calls,
    count(distinct t.run_id) as runs_calling,
    count(*) filter (where t.tool_error) as tool_errors,
    count(*) filter (where t.tool_error) / count(*) as error_rate,
    count(*) filter (where t.mapping_status = 'mapped') as mapped_calls,
    avg(t.duration_ms) as avg_duration_ms
from {{ source('eval', 'tool_calls') }} as t
join {{ ref('stg_runs') }} as r using (run_id)
group by t.cell_key, t.tool_name
