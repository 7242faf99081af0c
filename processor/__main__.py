import sys

from deltaflow.processor.cli import main

sys.exit(main())
