{% test unique_combination(model, combination) %}
-- Fails on every combination of the given columns that occurs more than once.
select {{ combination | join(', ') }}, count(*) as occurrences
from {{ model }}
group by {{ combination | join(', ') }}
having count(*) > 1
{% endtest %}
