-- Per cell x tier x k: pass@k and pass^k averaged over the tasks with at least k decided runs.
-- Rows exist only for tasks run more than once (repeats > 1); see eval.pass_k.
select
    cell_key,
    tier,
    k,
    count(*) as tasks,
    count(pass_at_k) as tasks_decided,
    avg(pass_at_k) as avg_pass_at_k,
    avg(pass_hat_k) as avg_pass_hat_k
from {{ source('eval', 'pass_k') }}
group by cell_key, tier, k
