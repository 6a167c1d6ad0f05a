"""`python -m dasher_rnn.cli`, as `dasher-rnn`."""

import sys

from dasher_rnn.cli import main

sys.exit(main())
