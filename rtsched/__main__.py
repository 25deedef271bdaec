import sys

from rtsched.cli import main

sys.exit(main())
