from dasher_rnn.cli import main

raise SystemExit(main())
