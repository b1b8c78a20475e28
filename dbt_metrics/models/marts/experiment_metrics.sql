-- Experiment-level aggregates per cell x tier x metric (the latest run of each cell), with the
-- error bars of averaged metrics from the statistics stage (eval.metric_estimates, scope
-- 'cell'): tasks, clustered standard error, 95 % interval and its method. scored is the n.
with aggregates as (
    select
        cell_key,
        any_value(model_provider) as model_provider,
        any_value(model_name) as model_name,
        any_value(capability_set) as capability_set,
        any_value(mcp_version) as mcp_version,
        any_value(skills_version) as skills_version,
        any_value(system_prompt) as system_prompt,
        tier,
        metric,
        {{ aggregate_metric() }}
    from {{ ref('stg_metrics') }}
    group by cell_key, tier, metric
)

select
    a.*,
    {{ estimate_columns('e') }}
from aggregates as a
left join {{ source('eval', 'metric_estimates') }} as e
    on e.scope = 'cell' and e.cell_key = a.cell_key
    and e.tier = a.tier and e.metric = a.metric
