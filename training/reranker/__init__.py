"""Training the cross-encoder reranker: data preparation (queries, positives, mined hard negatives) and the loop.

Entry point: `python -m training.reranker` (see training/reranker/cli.py).
"""
