"""Offline jobs: the reranker's and the generator's training, their data, and the retrieval evaluation harness."""
