"""``python -m raglab.surfaces.cli``: the command line, as ``raglab``."""
import sys

from raglab.surfaces.cli import main

sys.exit(main())
