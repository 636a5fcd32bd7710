"""aer-rag: question answering over American Economic Review abstracts, with citations."""

import runtime  # noqa: F401  (first: it sets OpenMP's waiting policy before torch loads)

__version__ = "0.1.0"
