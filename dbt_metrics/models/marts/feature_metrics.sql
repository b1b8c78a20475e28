-- Per cell x toolset feature x tier x metric (the latest run of each cell): the aggregates of
-- experiment_metrics over the runs of the tasks exercising the feature (the features of each
-- run's task version, as in stg_runs), with the error bars of the statistics stage
-- (eval.feature_estimates, clustered by task). A task exercises several features, so its runs
-- count in several rows: features are views on the results, not a partition of them.
with run_features as (
    select r.run_id, f.feature
    from {{ ref('stg_runs') }} as r
    join {{ ref('stg_task_features') }} as f
        on f.task_id = r.task_id and f.spec_hash = r.task_spec_hash
),

aggregates as (
    select
        m.cell_key,
        any_value(m.model_provider) as model_provider,
        any_value(m.model_name) as model_name,
        any_value(m.capability_set) as capability_set,
        any_value(m.mcp_version) as mcp_version,
        f.feature,
        count(distinct m.task_id) as feature_tasks,
        m.tier,
        m.metric,
        {{ aggregate_metric() }}
    from {{ ref('stg_metrics') }} as m
    join run_features as f using (run_id)
    group by m.cell_key, f.feature, m.tier, m.metric
)

select
    a.*,
    {{ estimate_columns('e') }}
from aggregates as a
left join {{ source('eval', 'feature_estimates') }} as e
    on e.cell_key = a.cell_key and e.feature = a.feature
    and e.tier = a.tier and e.metric = a.metric
