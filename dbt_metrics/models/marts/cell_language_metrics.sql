-- Per cell x task language x tier x metric (the latest run of each cell): the aggregates of
-- experiment_metrics split by the language of the task's prompt (fr, en, ...), with the error
-- bars of the statistics stage (eval.metric_estimates, scope 'cell_language', clustered by
-- task). Read it next to experiment_metrics: a cell can be good in French and poor in English.
with aggregates as (
    select
        cell_key,
        any_value(model_provider) as model_provider,
        any_value(model_name) as model_name,
        any_value(capability_set) as capability_set,
        any_value(mcp_version) as mcp_version,
        any_value(skills_version) as skills_version,
        any_value(system_prompt) as system_prompt,
        language,
        count(distinct task_id) as language_tasks,
        tier,
        metric,
        {{ aggregate_metric() }}
    from {{ ref('stg_metrics') }}
    group by cell_key, language, tier, metric
)

select
    a.*,
    {{ estimate_columns('e') }}
from aggregates as a
left join {{ source('eval', 'metric_estimates') }} as e
    on e.scope = 'cell_language' and e.cell_key = a.cell_key and e.language = a.language
    and e.tier = a.tier and e.metric = a.metric
