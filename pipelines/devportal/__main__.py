"""`python -m devportal` runs the command-line interface."""

from devportal.cli import main

raise SystemExit(main())
