-- Tasks on which a newer MCP version does worse than an older one, paired: for every two cells
-- that differ only in the MCP version (same model, capability set, skills and prompt), each
-- task and averaged headline metric whose mean over the repeats scored in both cells is lower
-- in the newer version. Versions are compared as versions (0.2.5 < 0.2.26), not as text.
-- "Tasks where 0.2.26 regresses against 0.2.19":
--   select * from regressions where newer_version = '0.2.26' and older_version = '0.2.19'
with cells as (
    select
        cell_key,
        model_provider,
        model_name,
        capability_set,
        mcp_version,
        skills_version,
        system_prompt
    from {{ source('eval', 'cells') }}
    where mcp_version is not null
),

pairs as (
    select
        o.cell_key as older_cell,
        n.cell_key as newer_cell,
        o.model_name,
        o.capability_set,
        o.skills_version,
        o.mcp_version as older_version,
        n.mcp_version as newer_version
    from cells as o
    join cells as n
        on o.model_provider = n.model_provider
        and o.model_name = n.model_name
        and o.capability_set = n.capability_set
        and o.skills_version is not distinct from n.skills_version
        and o.system_prompt = n.system_prompt
        and {{ version_key('o.mcp_version') }} < {{ version_key('n.mcp_version') }}
),

scores as (
    select cell_key, task_id, repeat_index, tier, metric, value
    from {{ source('eval', 'metrics') }}
    where aggregation = 'avg' and value is not null
        and metric in ('accuracy', 'action_f1', 'trajectory_adherence')
),

paired as (
    select
        p.older_cell,
        p.newer_cell,
        p.model_name,
        p.capability_set,
        p.skills_version,
        p.older_version,
        p.newer_version,
        o.task_id,
        o.tier,
        o.metric,
        count(*) as paired_runs,
        avg(o.value) as older_mean,
        avg(n.value) as newer_mean
    from pairs as p
    join scores as o on o.cell_key = p.older_cell
    join scores as n
        on n.cell_key = p.newer_cell and n.task_id = o.task_id
        and n.repeat_index = o.repeat_index and n.tier = o.tier and n.metric = o.metric
    group by all
)

select
    *,
    newer_mean - older_mean as mean_difference
from paired
where newer_mean < older_mean
