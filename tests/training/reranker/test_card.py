"""The model card: the command chain, the validation table and the chosen first-stage weight; the SciFact
section survives a rewrite."""

from pathlib import Path

from training.reranker.card import CARD_FILE, replace_evaluation, write_model_card
from training.reranker.trainer import TrainingSettings

INFO = {
    "name": "aer-rag-reranker-test",
    "init": "models/weights/reranker",
    "training_groups": {"econ-title": 3},
    "mining": {"bm25_negatives": 3, "dense_negatives": 2, "search_depth": 30, "random_negatives": 0},
    "validation": {"econ-heldout-titles": {"hybrid (no rerank)": {"ndcg@10": 0.8, "mrr@10": 0.7, "recall@10": 0.9}}},
    "first_stage_weight": 1.0,
    "commands": ["python -m training.reranker --steps 800", "python -m training.reranker --steps 0"],
}


def test_card_lists_every_command_and_keeps_the_scifact_table(tmp_path: Path) -> None:
    write_model_card(tmp_path, INFO, TrainingSettings(steps=0))
    replace_evaluation(tmp_path / CARD_FILE, "| hybrid | 0.71 |")
    write_model_card(tmp_path, INFO, TrainingSettings(steps=0))  # a retrain keeps the measured table
    card = (tmp_path / CARD_FILE).read_text()
    assert card.index("--steps 800") < card.index("--steps 0")
    assert "| econ-heldout-titles | hybrid (no rerank) | 0.8000 | 0.7000 | 0.9000 |" in card
    assert "first-stage weight 1" in card
    assert "| hybrid | 0.71 |" in card


def test_card_of_a_weight_average_names_both_parents(tmp_path: Path) -> None:
    write_model_card(tmp_path, INFO, TrainingSettings(steps=0))
    assert "weight average" not in (tmp_path / CARD_FILE).read_text()
    write_model_card(tmp_path, {**INFO, "averaged_from": ["var/a", "var/b"]}, TrainingSettings(steps=0))
    card = (tmp_path / CARD_FILE).read_text()
    assert "A weight average of var/a and var/b" in card
    assert "var/b's last run" in card
