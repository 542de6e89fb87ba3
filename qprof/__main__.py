from qprof.cli import main

raise SystemExit(main())
