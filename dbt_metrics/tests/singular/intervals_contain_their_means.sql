-- Every 95 % interval contains its mean, and every averaged metric scored on two or more tasks
-- has one.
select cell_key, tier, metric, mean, ci_low, ci_high, tasks
from {{ ref('experiment_metrics') }}
where aggregation = 'avg'
  and (
    (ci_low is not null and (ci_low > mean + 1e-9 or ci_high < mean - 1e-9))
    or (tasks >= 2 and ci_low is null)
  )
