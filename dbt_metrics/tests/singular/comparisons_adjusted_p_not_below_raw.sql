-- Holm never lowers a p-value, and a verdict other than "no detectable difference" needs an
-- adjusted p-value below 0.05.
select cell_a, cell_b, tier, metric, p_value, p_adjusted, verdict
from {{ ref('cell_comparison') }}
where p_adjusted < p_value - 1e-12
   or (verdict in ('better', 'worse') and not p_adjusted < 0.05)
