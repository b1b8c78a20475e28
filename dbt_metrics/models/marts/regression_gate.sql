-- The regression gate per experiment run x cell: how many headline comparisons with the
-- cell's previous run were made, which failed (a significant drop), which were not comparable
-- (a judge-decided score under another judge or prompt, or a criterion coverage beyond the
-- tolerance: never "worse"; or the two runs met another snapshot or twin/toolset code: "the
-- world changed"), and the cell's outcome. is_latest marks the most recent experiment checked (what `datagouv-eval gate` shows).
with latest as (
    select experiment_id
    from {{ source('eval', 'experiments') }}
    where experiment_id in (select experiment_id from {{ source('eval', 'gate_results') }})
    order by recorded_at desc
    limit 1
)

select
    g.experiment_id,
    any_value(e.recorded_at) as recorded_at,
    g.cell_key,
    any_value(g.model_name) as model_name,
    any_value(g.previous_experiment_id) as previous_experiment_id,
    count(*) as comparisons,
    count(*) filter (where g.pairs > 0) as compared,
    count(*) filter (where g.failed) as failed_comparisons,
    not bool_or(g.failed) as passed,
    string_agg(
        case when g.failed then g.tier || ' ' || g.metric || ' [' || g.language || ']' end,
        ', ' order by g.tier, g.metric, g.language
    ) as failed_measures,
    count(*) filter (where not g.comparable) as not_comparable_comparisons,
    string_agg(
        case when not g.comparable then g.tier || ' ' || g.metric || ' [' || g.language || ']' end,
        ', ' order by g.tier, g.metric, g.language
    ) as not_comparable_measures,
    coalesce(bool_or(g.world_changed), false) as world_changed,
    case
        when bool_or(g.failed) then 'worse'
        when bool_or(g.world_changed) then 'not comparable: the world changed'
        when bool_or(not g.comparable) then 'not comparable'
        else 'passed'
    end as outcome,
    min(g.mean_difference) filter (where g.failed) as worst_drop,
    min(g.p_adjusted) as min_p_adjusted,
    g.experiment_id in (select experiment_id from latest) as is_latest
from {{ source('eval', 'gate_results') }} as g
join {{ source('eval', 'experiments') }} as e using (experiment_id)
group by g.experiment_id, g.cell_key
