"""Size limits that a lower layer enforces and the command line checks while parsing options
(it cannot import the lower layer then: building the parser loads no solver)."""
from __future__ import annotations

# The largest instance an exact solve accepts (jobs): milp.solve.check_size refuses larger ones,
# `rtsched instances generate` refuses to write them.
MAX_SOLVE_JOBS = 5000
