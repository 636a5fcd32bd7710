import sys

from training.reranker.cli import main

sys.exit(main())
