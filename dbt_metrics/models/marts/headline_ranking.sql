-- The headline table per cell x tier: accuracy and action F1 with n, coverage and 95 %
-- intervals. Cells are ranked by accuracy only among those scored on at least half their runs
-- (ranked = true); the others come after, unranked, with a note saying on how few runs they
-- were scored, so a cell judged on 2 of 14 runs never tops the table unannounced.
with metrics as (
    select * from {{ ref('experiment_metrics') }}
    where tier in ('minimal', 'optimal') and metric in ('accuracy', 'action_f1')
),

cells as (
    select
        cell_key,
        tier,
        any_value(model_provider) as model_provider,
        any_value(model_name) as model_name,
        any_value(capability_set) as capability_set,
        any_value(mcp_version) as mcp_version,
        any_value(skills_version) as skills_version,
        max(runs) as runs,
        max(scored) filter (where metric = 'accuracy') as accuracy_n,
        max(tasks) filter (where metric = 'accuracy') as accuracy_tasks,
        max(coverage) filter (where metric = 'accuracy') as accuracy_coverage,
        max(mean) filter (where metric = 'accuracy') as accuracy,
        max(ci_low) filter (where metric = 'accuracy') as accuracy_ci_low,
        max(ci_high) filter (where metric = 'accuracy') as accuracy_ci_high,
        max(scored) filter (where metric = 'action_f1') as action_f1_n,
        max(coverage) filter (where metric = 'action_f1') as action_f1_coverage,
        max(mean) filter (where metric = 'action_f1') as action_f1,
        max(ci_low) filter (where metric = 'action_f1') as action_f1_ci_low,
        max(ci_high) filter (where metric = 'action_f1') as action_f1_ci_high
    from metrics
    group by cell_key, tier
)

select
    *,
    coalesce(accuracy_coverage >= 0.5 and accuracy is not null, false) as ranked,
    case
        when accuracy_coverage >= 0.5 and accuracy is not null
            then rank() over (
                partition by tier, (accuracy_coverage >= 0.5 and accuracy is not null)
                order by accuracy desc
            )
    end as accuracy_rank,
    case
        when accuracy is null then 'accuracy not scored on any run'
        when accuracy_coverage < 0.5
            then 'scored on ' || accuracy_n || ' of ' || runs || ' runs: not ranked'
    end as note
from cells
