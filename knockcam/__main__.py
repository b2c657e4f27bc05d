import sys

from knockcam.cli import main

sys.exit(main())
