"""Imported first by the ranking-trial scripts (`python -m bench.rag_dev_trials`, `..._fourth`,
`..._fifth`), before numpy loads: one BLAS thread (the products are tiny, and threads only contend on a
2-core machine) and no log line per request. Importing it sets these defaults, so only those scripts
import it, never a module that tests import."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
