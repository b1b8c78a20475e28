-- Per model x capability set x toolset version x task language x tier x metric.
select
    model_provider,
    model_name,
    capability_set,
    mcp_version,
    language,
    tier,
    metric,
    count(distinct cell_key) as cells,
    {{ aggregate_metric() }}
from {{ ref('stg_metrics') }}
group by all
