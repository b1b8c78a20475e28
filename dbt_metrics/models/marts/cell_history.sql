-- Every experiment run x cell x tier x averaged metric, from the history tables: what each
-- earlier run scored (runs, scored, coverage, mean), for trends and for reading an old run.
-- The marts above show the latest run of each cell; this one shows them all.
select
    h.experiment_id,
    any_value(e.recorded_at) as recorded_at,
    any_value(e.git_sha) as git_sha,
    any_value(e.git_dirty) as git_dirty,
    h.cell_key,
    any_value(r.model_name) as model_name,
    any_value(r.capability_set) as capability_set,
    any_value(r.mcp_version) as mcp_version,
    h.tier,
    h.metric,
    count(*) as runs,
    count(h.value) as scored,
    count(h.value) / count(*) as coverage,
    avg(h.value) as mean,
    count(*) filter (where r.status <> 'ok') as runs_not_ok
from {{ source('eval', 'metrics_history') }} as h
join {{ source('eval', 'runs_history') }} as r using (experiment_id, run_id)
join {{ source('eval', 'experiments') }} as e using (experiment_id)
where h.aggregation = 'avg'
group by h.experiment_id, h.cell_key, h.tier, h.metric
