-- One row per task spec version x toolset feature it exercises (the spec's meta.exercises), with
-- the task's name and language, and whether the version is the task's latest (the one the
-- report lists the features of).
select
    f.task_id,
    f.spec_hash,
    f.task_version,
    f.feature,
    f.area,
    t.task_name,
    t.language,
    f.task_version = max(f.task_version) over (partition by f.task_id) as is_latest_version
from {{ source('eval', 'task_features') }} as f
join {{ source('eval', 'tasks') }} as t using (task_id, spec_hash)
