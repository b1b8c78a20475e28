-- Per cell (latest run): what a correct answer costs. A run is correct when its accuracy in the
-- tier is 1 (every criterion passed). total_cost adds the agent's and the judge's cost of every
-- run, and is NULL unless every run of the cell is priced; cost_per_correct_answer is NULL
-- without a total or without a correct run (never a division by zero, never a made-up 0).
with runs as (
    select
        r.cell_key,
        r.run_id,
        r.cost,
        r.judge_cost,
        r.currency,
        r.status
    from {{ source('eval', 'runs') }} as r
),

correct as (
    select cell_key, tier, count(*) filter (where value = 1) as correct_answers,
           count(value) as scored
    from {{ source('eval', 'metrics') }}
    where metric = 'accuracy' and tier in ('minimal', 'optimal')
    group by all
),

costs as (
    select
        cell_key,
        any_value(currency) as currency,
        count(*) as runs,
        count(cost) as priced_runs,
        case
            when count(cost) = count(*)
                then sum(cost + coalesce(judge_cost, 0))
        end as total_cost
    from runs
    group by cell_key
)

select
    c.cell_key,
    cl.model_name,
    cl.capability_set,
    cl.mcp_version,
    cl.skills_version,
    k.tier,
    c.runs,
    c.priced_runs,
    k.scored,
    k.correct_answers,
    c.total_cost,
    c.currency,
    c.total_cost / nullif(k.correct_answers, 0) as cost_per_correct_answer
from costs as c
join correct as k using (cell_key)
join {{ source('eval', 'cells') }} as cl using (cell_key)
