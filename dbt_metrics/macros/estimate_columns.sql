{#- The error bars the statistics stage computed (eval.metric_estimates): NULL for sum metrics,
    and for means over fewer than two tasks (the estimate's reason says so). -#}
{% macro estimate_columns(alias) %}
    {{ alias }}.tasks,
    {{ alias }}.std_error,
    {{ alias }}.ci_low,
    {{ alias }}.ci_high,
    {{ alias }}.interval_method,
    {{ alias }}.reason as interval_reason
{% endmacro %}
