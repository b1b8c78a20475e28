-- One row per verdict as it counts in a tier, with the run's dimensions.
select
    v.*,
    r.model_name,
    r.capability_set,
    r.mcp_version,
    r.language
from {{ source('eval', 'verdicts') }} as v
join {{ ref('stg_runs') }} as r using (run_id)
