from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from indexing.bm25 import Bm25Index, Bm25Settings, Bm25Tokenizer

TEXTS = [
    "Minimum wages and teenage employment in restaurants",
    "Monetary policy shocks and long-term interest rates",
    "Storm warnings reduced shipping losses on the Great Lakes",
    "Employers respond to minimum wage increases by cutting hours",
    "Interest rate pass-through to mortgage borrowers",
    "Trade costs, distance and the gravity equation",
]


def test_tokenizer_lowercases_drops_stop_words_and_stems() -> None:
    tokens = Bm25Tokenizer(Bm25Settings()).tokenize("The Employers' wages were RISING in Zürich, risk-taking firms!")
    assert tokens == ["employ", "wage", "rise", "zurich", "risk", "take", "firm"]
    plain = Bm25Tokenizer(Bm25Settings(stemmer=None, remove_stop_words=False)).tokenize("The wages were rising")
    assert plain == ["the", "wages", "were", "rising"]


def test_stemming_matches_inflected_forms() -> None:
    index = Bm25Index.build(TEXTS, Bm25Settings())
    assert index.search("employer responses to a wage increase", 2)[0][0] == 3


def test_search_ranks_matching_rows_and_omits_non_matching_ones() -> None:
    index = Bm25Index.build(TEXTS, Bm25Settings())
    results = index.search("minimum wage", 10)
    assert {row for row, _ in results} == {0, 3}
    assert results[0][1] >= results[1][1] > 0
    assert index.search("the of and", 5) == []  # only stop words: no evidence at all


def test_scores_equal_rank_bm25_get_scores() -> None:
    # A random corpus with skewed term frequencies (some terms in most rows: negative-IDF floor), and
    # queries with repeated and unknown terms.
    rng = np.random.default_rng(0)
    vocabulary = [f"w{i}" for i in range(60)]
    corpus = [list(rng.choice(vocabulary[: rng.integers(5, 60)], size=rng.integers(1, 40))) for _ in range(200)]
    settings = Bm25Settings()
    index = Bm25Index(settings, corpus)
    okapi = BM25Okapi(corpus, k1=settings.k1, b=settings.b, epsilon=settings.epsilon)
    for _ in range(20):
        query = [str(term) for term in rng.choice([*vocabulary, "unknown"], size=rng.integers(1, 6))]
        np.testing.assert_allclose(index.term_scores(query), okapi.get_scores(query), rtol=1e-12, atol=1e-12)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index = Bm25Index.build(TEXTS, Bm25Settings())
    path = index.save(tmp_path)
    assert path.read_text(encoding="utf-8").startswith("{")  # JSON, not pickle
    loaded = Bm25Index.load(tmp_path)
    for query in ("interest rates", "storm on the lakes", "gravity of trade distance"):
        assert loaded.search(query, 6) == index.search(query, 6)
        np.testing.assert_allclose(loaded.scores(query), index.scores(query))


def test_allowed_mask_filters_before_cutting() -> None:
    index = Bm25Index.build(TEXTS, Bm25Settings())
    allowed = np.zeros(len(TEXTS), dtype=bool)
    allowed[[3, 4]] = True
    # Unfiltered, row 1 or 4 and row 0 or 3 compete; the mask must not just post-filter a top-1 cut.
    assert index.search("minimum wage interest rates", 1, allowed)[0][0] in (3, 4)
    assert {row for row, _ in index.search("minimum wage interest rates", 5, allowed)} == {3, 4}
    assert index.search("gravity", 5, allowed) == []  # the only match is not allowed
    with pytest.raises(ValueError, match="boolean array"):
        index.search("wage", 5, np.ones(3, dtype=bool))


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="k1"):
        Bm25Settings(b=1.5)
    with pytest.raises(ValueError, match="Snowball"):
        Bm25Settings(stemmer="klingon")
