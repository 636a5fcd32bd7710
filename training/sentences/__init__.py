"""Sentence-level evidence: which sentences of an abstract state a result that answers a question."""
