"""`python -m functions.cli ...`, the same as the `research-agent` script."""

from __future__ import annotations

from functions.cli.main import main

raise SystemExit(main())
