{% test in_unit_interval(model, column_name) %}
-- Fails on every non-NULL value outside [0, 1] (NULL means unscored and is allowed).
select {{ column_name }} as offending_value
from {{ model }}
where {{ column_name }} is not null
  and ({{ column_name }} < 0 or {{ column_name }} > 1)
{% endtest %}
