"""Training the cross-encoder reranker: data preparation (queries, positives, mined hard negatives) and the loop.

Entry point: `python -m indexing.train_reranker` (see indexing/train_reranker.py).
"""
