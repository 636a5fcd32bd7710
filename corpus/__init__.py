"""The ground floor: the vocabulary every stage shares (documents, chunks, sentences, filters) and the storage
port (`SearchBackend`) that retrieval asks and the backends implement. Imports nothing of ours."""
