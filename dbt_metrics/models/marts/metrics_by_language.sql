-- Per model x capability set x toolset version x task language x tier x metric, with the error
-- bars of averaged metrics (eval.metric_estimates, scope 'language', clustered by task).
with aggregates as (
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
)

select
    a.*,
    {{ estimate_columns('e') }}
from aggregates as a
left join {{ source('eval', 'metric_estimates') }} as e
    on e.scope = 'language' and e.model_provider = a.model_provider
    and e.model_name = a.model_name and e.capability_set = a.capability_set
    and e.mcp_version is not distinct from a.mcp_version and e.language = a.language
    and e.tier = a.tier and e.metric = a.metric
