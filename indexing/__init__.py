"""Ingestion job for aer-rag: turn the AER abstracts CSV into a published BM25 + dense index.

One module per stage, in pipeline order (pipeline.IngestionPipeline runs them):
    loader.py     CorpusLoader      read + validate the CSV -> Documents (cleaning.py does the text)
    chunking.py   SentenceChunker   sentence-aware chunks that fit the embedding model's window
    bm25.py       Bm25Index         rank-bm25 over stemmed, stop-worded tokens (persisted as JSON)
    embedding.py  Embedder          all-MiniLM-L6-v2, offline; embedding_cache.py skips unchanged text
    dense.py      DenseIndex        FAISS inner-product index (flat, or HNSW)
    publish.py    IndexPublisher    build beside the target, swap a symlink atomically
    manifest.py                     manifest.json: inputs, settings, versions, file hashes
Readers: index.PublishedIndex (the directory, by row, for offline jobs) and local_backend.LocalIndexBackend (the
same behind the SearchBackend port of corpus/, as the service reads it); postgres/ is the PostgreSQL + pgvector
backend and publisher. The command line is cli.py (`python -m indexing`, `aer-ingest`).
"""
