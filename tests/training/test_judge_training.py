"""The judge's training: its affine map folds into the cross-encoder exactly, and a few steps on pairs that
contrast what is asked move the answering pair above the near miss."""

from pathlib import Path

import torch
from transformers import AutoTokenizer

from retrieval.cross_encoder import SegmentPoolingCrossEncoder
from training.judge import AffineJudge, JudgePair, train

PASSAGE = "Vouchers and schooling\nLottery winners of private-school vouchers finished secondary school more often."
PAIRS = [
    JudgePair("Did voucher lottery winners finish school more often?", PASSAGE, 1, "positive"),
    JudgePair("Did voucher lottery winners earn more as adults?", PASSAGE, 0, "contrast"),
]


def batch(tokenizer, pairs: list[JudgePair]) -> dict[str, torch.Tensor]:
    return tokenizer([p.question for p in pairs], [p.passage for p in pairs], padding=True, return_tensors="pt")


def test_the_affine_map_folds_into_the_cross_encoder(tiny_reranker_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_reranker_dir, local_files_only=True)
    judge = AffineJudge(SegmentPoolingCrossEncoder.load(tiny_reranker_dir), scale=0.37, shift=-1.9).eval()
    encoded = batch(tokenizer, PAIRS)
    with torch.no_grad():
        before = judge(**encoded)
        after = judge.folded()(**encoded)
    torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-5)


def test_training_on_a_contrast_orders_the_pair(tiny_reranker_dir: Path) -> None:
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tiny_reranker_dir, local_files_only=True)
    judge = AffineJudge(SegmentPoolingCrossEncoder.load(tiny_reranker_dir), scale=0.25, shift=-2.5)
    losses = train(judge, tokenizer, PAIRS, steps=40, batch_size=2, learning_rate=1e-3, max_length=64, seed=1)
    assert len(losses) == 40 and losses[-1] < losses[0]
    with torch.no_grad():
        answered, near_miss = judge(**batch(tokenizer, PAIRS)).tolist()
    assert answered > 0 > near_miss
