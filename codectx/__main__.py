"""`python -m codectx` runs the command line."""

from codectx.cli import main

raise SystemExit(main())
