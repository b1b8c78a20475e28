-- The statistics stage (Python) and dbt count and average the same runs: n = scored, same
-- runs, same mean. A drift between the two implementations fails here.
select m.cell_key, m.tier, m.metric, m.runs, m.scored, m.mean, e.runs as e_runs, e.n, e.mean
from {{ ref('experiment_metrics') }} as m
join {{ source('eval', 'metric_estimates') }} as e
    on e.scope = 'cell' and e.cell_key = m.cell_key and e.tier = m.tier and e.metric = m.metric
where m.aggregation = 'avg'
  and (e.n <> m.scored or e.runs <> m.runs or abs(e.mean - m.mean) > 1e-9)
