-- One row per cell x tier: the headline averages and totals, side by side. Each average has
-- its n (<metric>_n: runs scored) and 95 % interval (<metric>_ci_low / _ci_high).
with runs as (
    select
        cell_key,
        count(*) as runs,
        count(*) filter (where status = 'ok') as runs_ok,
        count(*) filter (where status = 'error') as runs_error,
        count(*) filter (where status = 'budget_exceeded') as runs_budget_exceeded,
        count(*) filter (where status = 'skipped') as runs_skipped,
        sum(input_tokens) as total_input_tokens,
        sum(output_tokens) as total_output_tokens,
        sum(tool_call_count) as total_tool_calls,
        -- NULL when any run's cost is unknown: a partial sum would understate the spend.
        case when count(cost) = count(*) then sum(cost) end as total_cost,
        case when count(judge_cost) = count(*) then sum(judge_cost) end as total_judge_cost
    from {{ ref('stg_runs') }}
    group by cell_key
),

metrics as (
    select * from {{ ref('experiment_metrics') }}
),

failures as (
    select cell_key, tier, count(*) filter (where present) as runs_with_failure_modes
    from (
        select cell_key, task_id, repeat_index, tier, bool_or(present) as present
        from {{ source('eval', 'failure_modes') }}
        group by all
    )
    group by all
)

select
    m.cell_key,
    any_value(m.model_name) as model_name,
    any_value(m.capability_set) as capability_set,
    any_value(m.mcp_version) as mcp_version,
    m.tier,
    any_value(r.runs) as runs,
    any_value(r.runs_ok) as runs_ok,
    any_value(r.runs_error) as runs_error,
    any_value(r.runs_budget_exceeded) as runs_budget_exceeded,
    any_value(r.runs_skipped) as runs_skipped,
    max(m.mean) filter (where m.metric = 'accuracy') as accuracy,
    max(m.coverage) filter (where m.metric = 'accuracy') as accuracy_coverage,
    max(m.mean) filter (where m.metric = 'action_type_recall') as action_type_recall,
    max(m.mean) filter (where m.metric = 'action_precision') as action_precision,
    max(m.mean) filter (where m.metric = 'action_recall') as action_recall,
    max(m.mean) filter (where m.metric = 'action_f1') as action_f1,
    max(m.coverage) filter (where m.metric = 'action_recall') as action_recall_coverage,
    max(m.mean) filter (where m.metric = 'trajectory_adherence') as trajectory_adherence,
    max(m.total_value) filter (where m.metric = 'required_actions') as total_required_actions,
    max(m.total_value) filter (where m.metric = 'matched_actions') as total_matched_actions,
    max(m.total_value) filter (where m.metric = 'criteria_total') as total_criteria,
    max(m.total_value) filter (where m.metric = 'criteria_scored') as total_criteria_scored,
    -- Criterion coverage: decided criteria / criteria asked, over the judged runs of the tier
    -- (accuracy_coverage is the share of runs with at least one decided criterion).
    max(m.total_value) filter (where m.metric = 'criteria_scored')
        / nullif(max(m.total_value) filter (where m.metric = 'criteria_total'), 0)
        as criterion_coverage,
    any_value(f.runs_with_failure_modes) as runs_with_failure_modes,
    {%- for metric in ['accuracy', 'action_type_recall', 'action_precision', 'action_recall',
                       'action_f1', 'trajectory_adherence'] %}
    max(m.scored) filter (where m.metric = '{{ metric }}') as {{ metric }}_n,
    max(m.ci_low) filter (where m.metric = '{{ metric }}') as {{ metric }}_ci_low,
    max(m.ci_high) filter (where m.metric = '{{ metric }}') as {{ metric }}_ci_high,
    {%- endfor %}
    any_value(r.total_input_tokens) as total_input_tokens,
    any_value(r.total_output_tokens) as total_output_tokens,
    any_value(r.total_tool_calls) as total_tool_calls,
    any_value(r.total_cost) as total_cost,
    any_value(r.total_judge_cost) as total_judge_cost
from metrics as m
join runs as r using (cell_key)
left join failures as f on f.cell_key = m.cell_key and f.tier = m.tier
where m.tier in ('minimal', 'optimal')
group by m.cell_key, m.tier
