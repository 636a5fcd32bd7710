from dataclasses import dataclass

import pytest

from corpus.documents import Chunk
from training.reranker.data import HardNegativeMiner, MiningSettings


@dataclass
class ScriptedIndex:
    """Stands in for PublishedIndex: fixed BM25 and dense result lists over six one-chunk documents."""

    chunks: list[Chunk]

    def search_bm25(self, query: str, top_n: int) -> list[tuple[int, float]]:
        return [(row, 1.0 / (1 + row)) for row in (0, 1, 2, 3)][:top_n]

    def search_dense(self, query: str, top_n: int) -> list[tuple[int, float]]:
        return [(row, 1.0 / (1 + row)) for row in (1, 4, 0, 5)][:top_n]


def scripted_index() -> ScriptedIndex:
    texts = ["the positive", "bm25 and dense", "bm25 two", "bm25 three", "dense two", "dense three"]
    return ScriptedIndex([
        Chunk(f"d{i}#0", f"d{i}", 0, text, 0, len(text), title=f"Title {i}") for i, text in enumerate(texts)
    ])  # fmt: skip


def test_miner_takes_top_results_of_each_retriever_without_relevant_or_repeated_rows() -> None:
    miner = HardNegativeMiner(scripted_index(), MiningSettings(bm25_negatives=2, dense_negatives=2, search_depth=4), 0)  # type: ignore[arg-type]
    negatives = miner.mine("query", relevant_doc_ids={"d0"}, show_title=False)
    # BM25 gives d1, d2 (d0 is relevant); dense then skips d1 (already taken) and d0: d4, d5.
    assert negatives == ("bm25 and dense", "bm25 two", "dense two", "dense three")
    assert miner.mine("query", {"d0"}, show_title=True)[0] == "Title 1\nbm25 and dense"


def test_random_negatives_fill_up_and_never_hit_relevant_documents() -> None:
    settings = MiningSettings(bm25_negatives=0, dense_negatives=0, random_negatives=3, search_depth=4)
    miner = HardNegativeMiner(scripted_index(), settings, seed=1)  # type: ignore[arg-type]
    for _ in range(20):
        negatives = miner.mine("query", {"d0", "d1"}, show_title=False)
        assert len(set(negatives)) == 3 and not {"the positive", "bm25 and dense"} & set(negatives)


def test_mining_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="search_depth"):
        MiningSettings(bm25_negatives=5, search_depth=3)
    with pytest.raises(ValueError, match="dense_negatives"):
        MiningSettings(dense_negatives=-1)
