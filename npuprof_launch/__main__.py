"""``python -m npuprof_launch`` is ``npuprof-run``."""

import sys

from npuprof_launch.launcher.cli import main

sys.exit(main())
