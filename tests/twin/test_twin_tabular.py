"""The Tabular API query engine on a small hand-built table."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from datagouv_eval_pipeline.world.catalogue import tabular
from datagouv_eval_pipeline.world.catalogue.tabular import Column, QueryError, Table

CSV = """commune;dep;population;created;ouvert
Auch;32;22000;2012-06-27T10:00:00;true
Condom;32;6700;2012-06-28T09:00:00;false
Toulouse;31;504000;2011-12-05T08:00:00;true
Muret;31;;2013-01-01T00:00:00;
Lectoure;32;3700;2012-06-28T00:00:00;true
"""
COLUMNS = [
    Column("commune", "string"),
    Column("dep", "string", "code_departement"),
    Column("population", "int"),
    Column("created", "datetime"),
    Column("ouvert", "bool"),
]


@pytest.fixture()
def table() -> Table:
    return Table.from_csv("t1", CSV, COLUMNS, ";", origin="test.csv")


def run(table: Table, *params: tuple[str, str], max_size: int = 50) -> tabular.QueryResult:
    return tabular.run_query(table, tabular.parse_query(table, params, page_size_max=max_size))


def communes(result: tabular.QueryResult) -> list[str]:
    return [row["commune"] for row in result.rows]


def test_rows_are_typed_and_carry_a_leading_id(table: Table) -> None:
    result = run(table)
    assert result.total == 5
    first = result.rows[0]
    assert list(first) == ["__id", "commune", "dep", "population", "created", "ouvert"]
    assert first == {
        "__id": 1,
        "commune": "Auch",
        "dep": "32",
        "population": 22000,
        "created": "2012-06-27T10:00:00",
        "ouvert": True,
    }
    assert table.rows[3][2] is None and table.rows[3][4] is None


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ((("dep__exact", "32"),), ["Auch", "Condom", "Lectoure"]),
        ((("dep__differs", "32"),), ["Toulouse", "Muret"]),
        ((("commune__contains", "OU"),), ["Toulouse", "Lectoure"]),
        ((("commune__notcontains", "ou"),), ["Auch", "Condom", "Muret"]),
        ((("population__less", "6700"),), ["Condom", "Lectoure"]),
        ((("population__strictly_less", "6700"),), ["Lectoure"]),
        ((("population__greater", "22000"),), ["Auch", "Toulouse"]),
        ((("population__strictly_greater", "22000"),), ["Toulouse"]),
        ((("population__isnull", ""),), ["Muret"]),
        ((("population__in", "3700,6700"),), ["Condom", "Lectoure"]),
        ((("ouvert__exact", "true"),), ["Auch", "Toulouse", "Lectoure"]),
        ((("dep__exact", "32"), ("ouvert__exact", "false")), ["Condom"]),
    ],
)
def test_operators(table: Table, params: tuple[tuple[str, str], ...], expected: list[str]) -> None:
    assert communes(run(table, *params)) == expected


def test_date_filters_compare_timestamps(table: Table) -> None:
    # "before 2012-06-28" excludes Lectoure, created at midnight on the 28th
    assert communes(run(table, ("created__strictly_less", "2012-06-28"))) == ["Auch", "Toulouse"]
    # "up to 2012-06-28" means up to midnight: Lectoure yes, Condom (9 am) no
    assert communes(run(table, ("created__less", "2012-06-28"))) == ["Auch", "Toulouse", "Lectoure"]


def test_null_never_matches_a_comparison(table: Table) -> None:
    assert "Muret" not in communes(run(table, ("population__differs", "1")))
    assert "Muret" not in communes(run(table, ("population__less", "999999999")))


def test_sort_puts_nulls_last_ascending_and_first_descending(table: Table) -> None:
    assert communes(run(table, ("population__sort", "asc"))) == [
        "Lectoure",
        "Condom",
        "Auch",
        "Toulouse",
        "Muret",
    ]
    assert communes(run(table, ("population__sort", "desc"))) == [
        "Muret",
        "Toulouse",
        "Auch",
        "Condom",
        "Lectoure",
    ]


def test_multiple_sort_keys_apply_in_order_with_ties_by_id(table: Table) -> None:
    result = run(table, ("dep__sort", "asc"), ("commune__sort", "desc"))
    assert communes(result) == ["Toulouse", "Muret", "Lectoure", "Condom", "Auch"]
    assert communes(run(table, ("dep__sort", "desc"))) == [
        "Auch",
        "Condom",
        "Lectoure",
        "Toulouse",
        "Muret",
    ]


def test_pages_and_column_selection(table: Table) -> None:
    page2 = run(table, ("page", "2"), ("page_size", "2"))
    assert page2.total == 5
    assert [row["__id"] for row in page2.rows] == [3, 4]
    selected = run(table, ("columns", "dep,commune"), ("page_size", "1"))
    # exactly the named columns, in that order, as PostgREST's select=: no __id unless named
    assert selected.rows == [{"dep": "32", "commune": "Auch"}]
    with_id = run(table, ("columns", "commune,__id"), ("page_size", "1"))
    assert with_id.rows == [{"commune": "Auch", "__id": 1}]


def test_page_size_above_the_maximum_is_the_real_400(table: Table) -> None:
    with pytest.raises(QueryError) as error:
        tabular.parse_query(table, [("page_size", "51")], page_size_max=50)
    assert error.value.status == 400
    assert error.value.body == {
        "errors": [
            {
                "code": None,
                "title": "Invalid query string",
                "detail": "Page size exceeds allowed maximum: 50",
            }
        ]
    }


def test_unknown_column_is_a_postgrest_error_object(table: Table) -> None:
    with pytest.raises(QueryError) as error:
        tabular.parse_query(table, [("nom__exact", "x")], page_size_max=50)
    (detail,) = error.value.body["errors"]
    assert detail["title"] == "Database error"
    assert detail["detail"]["code"] == "42703"
    assert detail["detail"]["message"] == "column t1.nom does not exist"


def test_wrong_value_type_and_unknown_operator(table: Table) -> None:
    with pytest.raises(QueryError) as bad_type:
        tabular.parse_query(table, [("population__greater", "beaucoup")], page_size_max=50)
    assert bad_type.value.body["errors"][0]["detail"]["code"] == "22P02"
    assert "bigint" in bad_type.value.body["errors"][0]["detail"]["message"]
    with pytest.raises(QueryError) as bad_op:
        tabular.parse_query(table, [("population__between", "1")], page_size_max=50)
    assert bad_op.value.body["errors"][0]["title"] == "Invalid query string"
    with pytest.raises(QueryError):
        tabular.parse_query(table, [("population__sort", "up")], page_size_max=50)
    with pytest.raises(QueryError):
        tabular.parse_query(table, [("page", "zero")], page_size_max=50)


def test_aggregates_skip_nulls(table: Table) -> None:
    dep32 = [tabular.make_filter(table, "dep", "exact", "32")]
    assert tabular.aggregate(table, dep32, "count") == 3
    assert tabular.aggregate(table, [], "sum", "population") == 22000 + 6700 + 504000 + 3700
    assert tabular.aggregate(table, dep32, "avg", "population") == pytest.approx(32400 / 3)
    assert tabular.aggregate(table, [], "count_distinct", "dep") == 2
    muret = [tabular.make_filter(table, "commune", "exact", "Muret")]
    assert tabular.aggregate(table, muret, "max", "population") is None


def test_profile_shape(table: Table) -> None:
    profile = tabular.profile(table)
    assert profile["header"] == ["commune", "dep", "population", "created", "ouvert"]
    assert profile["total_lines"] == 5
    assert profile["columns"]["dep"] == {
        "python_type": "string",
        "format": "code_departement",
        "score": 1.0,
    }
    assert profile["columns"]["created"]["format"] == "datetime_naive"
    population = profile["profile"]["population"]
    assert population["nb_missing_values"] == 1
    assert population["min"] == 3700 and population["max"] == 504000
    assert profile["profile"]["dep"]["tops"][0] == {"count": 3, "value": "32"}


def test_malformed_csv_names_file_line_and_column() -> None:
    bad = "commune;dep;population;created;ouvert\nAuch;32;beaucoup;2012-01-01;true\n"
    with pytest.raises(ValueError, match=r"test\.csv: line 2, column 'population'"):
        Table.from_csv("t", bad, COLUMNS, ";", origin="test.csv")
    with pytest.raises(ValueError, match="differs from the schema"):
        Table.from_csv("t", "a;b\n", COLUMNS, ";", origin="test.csv")


def test_parse_value_types() -> None:
    assert tabular.parse_value(Column("d", "date"), "2012-06-28") == date(2012, 6, 28)
    parsed = tabular.parse_value(Column("t", "datetime"), "2012-06-28T10:00:00+02:00")
    assert parsed == datetime(2012, 6, 28, 8, 0, tzinfo=UTC).replace(tzinfo=None)
    assert tabular.parse_value(Column("b", "bool"), "Oui") is True
    assert tabular.parse_value(Column("s", "string"), "") is None


def test_or_groups_match_either_condition_as_api_tabular(table: Table) -> None:
    # or=(dep__exact.31,population__less.5000): Toulouse, Muret (dep 31), Lectoure (3700)
    either = run(table, ("or", "(dep__exact.31,population__less.5000)"))
    assert communes(either) == ["Toulouse", "Muret", "Lectoure"]
    # ANDed with the other filters, nested and(...), quoted values
    both = run(
        table,
        ("ouvert__exact", "true"),
        ("or", '(commune__exact."Auch",and(dep__exact.31,population__greater.100000))'),
    )
    assert communes(both) == ["Auch", "Toulouse"]
    assert communes(run(table, ("or", "(population__isnull,dep__exact.99)"))) == ["Muret"]
    with pytest.raises(QueryError) as malformed:
        run(table, ("or", "dep__exact.31"))
    assert malformed.value.status == 400
    assert malformed.value.body["errors"][0]["title"] == "Invalid query string"


def test_aggregation_without_equals_is_403_unauthorized(table: Table) -> None:
    pairs = tabular.query_pairs("dep__groupby&population__sum&page_size=5")
    assert pairs == [("dep__groupby", None), ("population__sum", None), ("page_size", "5")]
    with pytest.raises(QueryError) as denied:
        tabular.parse_query(table, pairs, page_size_max=50, resource_id="rid-1")
    assert denied.value.status == 403
    assert denied.value.body == {
        "errors": [
            {
                "code": None,
                "title": "Unauthorized parameters",
                "detail": "Aggregation parameters `groupby`, `sum` are not allowed for "
                "resource 'rid-1'",
            }
        ]
    }
    # With "=", the same name is a malformed filter (400), as in api-tabular.
    with pytest.raises(QueryError) as malformed:
        tabular.parse_query(table, tabular.query_pairs("dep__groupby="), page_size_max=50)
    assert malformed.value.status == 400
    # isnull without "=" stays a filter.
    no_equals = tabular.parse_query(
        table, tabular.query_pairs("population__isnull"), page_size_max=5
    )
    assert communes(tabular.run_query(table, no_equals)) == ["Muret"]
