-- Per capability set (over every model and version) x tier x metric, with the error bars of
-- averaged metrics (eval.metric_estimates, scope 'capability_set', clustered by task).
with aggregates as (
    select
        capability_set,
        tier,
        metric,
        count(distinct cell_key) as cells,
        count(distinct model_name) as models,
        {{ aggregate_metric() }}
    from {{ ref('stg_metrics') }}
    group by capability_set, tier, metric
)

select
    a.*,
    {{ estimate_columns('e') }}
from aggregates as a
left join {{ source('eval', 'metric_estimates') }} as e
    on e.scope = 'capability_set' and e.capability_set = a.capability_set
    and e.tier = a.tier and e.metric = a.metric
