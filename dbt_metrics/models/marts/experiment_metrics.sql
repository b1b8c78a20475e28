-- Experiment-level aggregates per cell x tier x metric.
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
