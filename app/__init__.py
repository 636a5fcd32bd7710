"""aer-rag: question answering over American Economic Review abstracts, with citations."""

__version__ = "0.1.0"
