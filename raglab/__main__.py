import sys

from raglab.surfaces.cli import main

sys.exit(main())
