"""Size limits that a lower layer enforces and the command line checks while parsing options
(it cannot import the lower layer then: building the parser loads no solver)."""
from __future__ import annotations

# The largest instance an exact solve accepts (jobs): milp.solve.check_size refuses larger ones,
# `rtsched instances generate` refuses to write them.
MAX_SOLVE_JOBS = 5000

# The largest flat machine (processors or nodes) a spec, a trace header or the API may give:
# 10^8, ten times the largest machine built so far (Sunway TaihuLight: 10.6 million cores).  A
# larger number is a typo or a corrupt header (10^11 was accepted and ran as a machine that never
# fills), not a machine.
# The same bound as the readers' largest job and header size (rtsched.io.cleaning.MAX_SIZE).
MAX_FLAT_NODES = 100_000_000
