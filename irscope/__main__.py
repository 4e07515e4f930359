import sys

from irscope.cli import main

sys.exit(main())
