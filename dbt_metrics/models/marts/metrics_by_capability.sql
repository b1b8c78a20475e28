-- Per capability set (over every model and version) x tier x metric.
select
    capability_set,
    tier,
    metric,
    count(distinct cell_key) as cells,
    count(distinct model_name) as models,
    {{ aggregate_metric() }}
from {{ ref('stg_metrics') }}
group by capability_set, tier, metric
