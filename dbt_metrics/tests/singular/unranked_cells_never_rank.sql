-- A cell scored on fewer than half its runs has no rank and says why.
select cell_key, tier, accuracy_coverage, accuracy_rank, note
from {{ ref('headline_ranking') }}
where (accuracy_coverage < 0.5 and (accuracy_rank is not null or note is null))
   or (ranked and accuracy_rank is null)
