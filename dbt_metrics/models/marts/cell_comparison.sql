-- Pairs of cells that differ in exactly one dimension (model, capability set, MCP version,
-- skills version or system prompt), with the deltas of their averaged metrics. Both orders are
-- listed; delta = b - a. paired_delta averages per-task differences over the tasks scored in
-- both cells (a fairer comparison when coverage differs). The paired test of the statistics
-- stage (eval.comparisons, on the (task, repeat) pairs both scored) gives the difference's 95 %
-- interval, the p-value, its Holm adjustment within dimension x metric x tier, the verdict with
-- its note (significant before Holm only, or an interval excluding 0 the test does not back),
-- the minimum detectable effect of the test used, and each side's coverage on the runs both
-- cells have (runs scored; for accuracy, criteria decided) flagged when they differ by more
-- than 0.05.
with cells as (
    select
        cell_key,
        model_provider || '/' || model_name as model,
        capability_set,
        mcp_version,
        skills_version,
        system_prompt
    from {{ source('eval', 'cells') }}
),

pairs as (
    select
        a.cell_key as cell_a,
        b.cell_key as cell_b,
        case
            when a.model <> b.model then 'model'
            when a.capability_set <> b.capability_set then 'capability_set'
            when a.mcp_version is distinct from b.mcp_version then 'mcp_version'
            when a.skills_version is distinct from b.skills_version then 'skills_version'
            else 'system_prompt'
        end as dimension,
        case
            when a.model <> b.model then a.model
            when a.capability_set <> b.capability_set then a.capability_set
            when a.mcp_version is distinct from b.mcp_version then a.mcp_version
            when a.skills_version is distinct from b.skills_version then a.skills_version
            else a.system_prompt
        end as value_a,
        case
            when a.model <> b.model then b.model
            when a.capability_set <> b.capability_set then b.capability_set
            when a.mcp_version is distinct from b.mcp_version then b.mcp_version
            when a.skills_version is distinct from b.skills_version then b.skills_version
            else b.system_prompt
        end as value_b
    from cells as a
    join cells as b on a.cell_key <> b.cell_key
    where (a.model <> b.model)::int
        + (a.capability_set <> b.capability_set)::int
        + (a.mcp_version is distinct from b.mcp_version)::int
        + (a.skills_version is distinct from b.skills_version)::int
        + (a.system_prompt <> b.system_prompt)::int = 1
),

per_task as (
    select cell_key, task_id, tier, metric, avg(value) as value
    from {{ ref('stg_metrics') }}
    where aggregation = 'avg' and value is not null
    group by all
),

paired as (
    select
        p.cell_a,
        p.cell_b,
        ta.tier,
        ta.metric,
        count(*) as paired_tasks,
        avg(tb.value - ta.value) as paired_delta
    from pairs as p
    join per_task as ta on ta.cell_key = p.cell_a
    join per_task as tb
        on tb.cell_key = p.cell_b and tb.task_id = ta.task_id
        and tb.tier = ta.tier and tb.metric = ta.metric
    group by all
)

select
    p.cell_a,
    p.cell_b,
    p.dimension,
    p.value_a,
    p.value_b,
    ma.tier,
    ma.metric,
    ma.mean as mean_a,
    mb.mean as mean_b,
    mb.mean - ma.mean as delta,
    ma.coverage as coverage_a,
    mb.coverage as coverage_b,
    coalesce(pd.paired_tasks, 0) as paired_tasks,
    pd.paired_delta,
    coalesce(c.pairs, 0) as paired_runs,
    c.mean_difference as paired_difference,
    c.ci_low as difference_ci_low,
    c.ci_high as difference_ci_high,
    c.test,
    c.p_value,
    c.p_adjusted,
    c.family_size,
    c.verdict,
    c.verdict_note,
    c.mde,
    c.mde_method,
    c.reason as test_reason,
    c.runs as compared_runs,
    c.coverage_a as paired_coverage_a,
    c.coverage_b as paired_coverage_b,
    c.criterion_coverage_a,
    c.criterion_coverage_b,
    c.coverage_differs,
    c.coverage_note
from pairs as p
join {{ ref('experiment_metrics') }} as ma on ma.cell_key = p.cell_a
join {{ ref('experiment_metrics') }} as mb
    on mb.cell_key = p.cell_b and mb.tier = ma.tier and mb.metric = ma.metric
left join paired as pd
    on pd.cell_a = p.cell_a and pd.cell_b = p.cell_b
    and pd.tier = ma.tier and pd.metric = ma.metric
left join {{ source('eval', 'comparisons') }} as c
    on c.cell_a = p.cell_a and c.cell_b = p.cell_b
    and c.tier = ma.tier and c.metric = ma.metric
where ma.aggregation = 'avg'
