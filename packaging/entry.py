"""The bundle's program: `dasher-rnn` as the installed command runs it (the app when no command is given)."""

import sys

from dasher_rnn.cli import main

if __name__ == "__main__":
    sys.exit(main())
