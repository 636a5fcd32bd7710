"""Retrieval evaluation: BEIR datasets converted into the ingestion CSV, standard ranking metrics, a harness."""
