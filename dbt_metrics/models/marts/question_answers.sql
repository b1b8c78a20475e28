-- Per evaluation type x factor its question compares x pair of the type's cells differing in that
-- factor only x tier x averaged metric: the answer of the statistics stage
-- (eval.question_comparisons: difference b - a with its 95 % interval, Holm-adjusted p within the
-- question, verdict with its note, minimum detectable effect of the test used, paired tasks,
-- each side's coverage flagged when it differs by more than 0.05), with the question in a sentence
-- (eval.questions). A question nothing answers (no cell of the type, no pair) is one row with no
-- pair and its reason, rather than no row read as "no difference".
select
    q.evaluation_type,
    q.description as question,
    q.factor,
    q.active,
    q.cells as type_cells,
    q.pairs as type_pairs,
    qc.setting,
    qc.cell_a,
    qc.cell_b,
    qc.value_a,
    qc.value_b,
    qc.tier,
    qc.metric,
    qc.higher_is_better,
    coalesce(qc.pairs, 0) as paired_runs,
    coalesce(qc.tasks, 0) as paired_tasks,
    qc.mean_a,
    qc.mean_b,
    qc.mean_difference,
    qc.ci_low,
    qc.ci_high,
    qc.test,
    qc.p_value,
    qc.family_size,
    qc.p_adjusted,
    qc.verdict,
    qc.verdict_note,
    qc.mde,
    qc.mde_method,
    qc.coverage_a,
    qc.coverage_b,
    qc.criterion_coverage_a,
    qc.criterion_coverage_b,
    qc.coverage_differs,
    qc.coverage_note,
    qc.verdict is not null as answered,
    coalesce(qc.reason, q.reason) as reason
from {{ source('eval', 'questions') }} as q
left join {{ source('eval', 'question_comparisons') }} as qc
    on qc.evaluation_type = q.evaluation_type and qc.factor = q.factor
