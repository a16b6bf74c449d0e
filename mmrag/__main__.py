"""``python -m mmrag`` runs the command line, as the ``mmrag`` script does."""

from mmrag.cli import main

raise SystemExit(main())
