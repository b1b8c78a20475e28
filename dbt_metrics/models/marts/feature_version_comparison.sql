-- Per toolset feature x pair of cells that differ only in the MCP version x tier x averaged
-- metric: the paired comparison of the statistics stage on the tasks exercising the feature
-- (eval.feature_comparisons: difference b - a, 95 % interval, Holm-adjusted p within feature x
-- dimension x metric x tier, verdict, minimum detectable effect). Every feature of the tasks'
-- latest versions is listed for every version pair the experiment compares (eval.comparisons),
-- so a feature no paired task exercises is a row with exercised = false and no figures: no
-- difference is expected there, rather than a missing row read as "no difference found".
-- Both orders of each pair are listed, as in cell_comparison.
with version_pairs as (
    select distinct cell_a, cell_b, value_a as version_a, value_b as version_b, tier, metric
    from {{ source('eval', 'comparisons') }}
    where dimension = 'mcp_version'
),

features as (
    select feature, any_value(area) as area, count(distinct task_id) as feature_tasks
    from {{ ref('stg_task_features') }}
    where is_latest_version
    group by feature
)

select
    f.feature,
    f.area,
    f.feature_tasks,
    p.cell_a,
    p.cell_b,
    c.model_provider || '/' || c.model_name as model,
    c.capability_set,
    p.version_a,
    p.version_b,
    p.tier,
    p.metric,
    coalesce(fc.tasks, 0) > 0 as exercised,
    coalesce(fc.pairs, 0) as pairs,
    coalesce(fc.tasks, 0) as tasks,
    fc.mean_a,
    fc.mean_b,
    fc.mean_difference,
    fc.ci_low,
    fc.ci_high,
    fc.test,
    fc.p_value,
    fc.family_size,
    fc.p_adjusted,
    fc.verdict,
    fc.mde,
    case
        when coalesce(fc.tasks, 0) = 0
            then 'not exercised: no task of the feature is scored in both cells (no difference expected)'
        else fc.reason
    end as reason
from version_pairs as p
cross join features as f
join {{ source('eval', 'cells') }} as c on c.cell_key = p.cell_a
left join {{ source('eval', 'feature_comparisons') }} as fc
    on fc.feature = f.feature and fc.cell_a = p.cell_a and fc.cell_b = p.cell_b
    and fc.tier = p.tier and fc.metric = p.metric
