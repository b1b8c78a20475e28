{#- A version string as a list of integers, so versions compare as versions: 0.2.5 < 0.2.26
    (as text '0.2.26' < '0.2.5'). A part that is not a number is NULL (sorted last). -#}
{% macro version_key(column) -%}
try_cast(string_split({{ column }}, '.') as integer[])
{%- endmacro %}
