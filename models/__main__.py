from models.cli import main

raise SystemExit(main())
