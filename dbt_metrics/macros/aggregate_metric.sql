{#- The original's experiment aggregation (avg of per-task ratios, totals of counts), except that
    NULL (undefined / unscored / failed) values are excluded and reported as coverage. -#}
{% macro aggregate_metric() %}
    count(*) as runs,
    count(value) as scored,
    count(value) / count(*) as coverage,
    any_value(aggregation) as aggregation,
    bool_and(bounded) as bounded,
    case when any_value(aggregation) = 'avg' then avg(value) end as mean,
    case when any_value(aggregation) = 'sum' then sum(value) end as total_value
{% endmacro %}
