import sys

from indexing.cli import main

sys.exit(main())
