"""The one fold and canonical JSON of ``datagouv_eval_pipeline.base.text``."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from datagouv_eval_pipeline.base.text import (
    canonical_json,
    fold,
    fold_cached,
    fold_fast,
    fold_spaced,
)

# French text is mostly Latin-1, with œ, typographic apostrophes and narrow no-break spaces.
FRENCH_ALPHABET = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'-\n")
    + list("àâäçéèêëîïôöùûüÿÀÂÄÇÉÈÊËÎÏÔÖÙÛÜŸœŒæÆß°²¼½«»\u2019\u02bc\u00a0\u202f€")
    + ["\u0301", "ﬁ", "Ω", "日"]
)


def test_fold_by_hand() -> None:
    assert fold("Œuvres d’Élodie") == "oeuvres d'elodie"
    assert fold("CŒUR, Nævus, Straße") == "coeur, naevus, strasse"
    assert fold("2\u202f076 habitants\u00a0!") == "2 076 habitants !"
    assert fold("m² et ½ litre, 12 °C, 5 €") == "m2 et 1⁄2 litre, 12 °c, 5 €"
    assert fold("e\u0301te\u0301") == "ete"  # combining accents, decomposed input
    assert fold("  deux   espaces ") == "  deux   espaces "
    assert fold_spaced("  deux \n  espaces ") == "deux espaces"


@given(st.text(alphabet=FRENCH_ALPHABET, max_size=60))
def test_the_fast_path_equals_the_reference_on_french_text(text: str) -> None:
    assert fold_fast(text) == fold(text)
    assert fold_cached(text) == fold(text)
    assert fold_spaced(text) == " ".join(fold(text).split())


@given(st.text(max_size=40))
def test_the_fast_path_equals_the_reference_on_any_text(text: str) -> None:
    assert fold_fast(text) == fold(text)


@given(st.text(alphabet=FRENCH_ALPHABET, max_size=40))
def test_fold_is_idempotent(text: str) -> None:
    assert fold(fold(text)) == fold(text)


def test_canonical_json_is_order_free_and_total() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert canonical_json({"a": [1, "é"], "b": 1}) == canonical_json({"b": 1, "a": [1, "é"]})
    assert canonical_json({"when": dt.date(2026, 12, 2)}) == '{"when":"2026-12-02"}'
