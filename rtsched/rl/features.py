"""Observation features of the two agents, shared by the environments and the trained policies.

Job picking (RLScheduler, seed 003 §2, the authors' 8 features, each clipped to ≤ 1 − 1e-5):

====  =======================  ===============================================================
 #    feature                  normalisation
====  =======================  ===============================================================
 0    wait = now − submit      / 43,200 s (12 h)
 1    requested time           / the trace's largest actual runtime
 2    requested processors     / the machine's processors (MaxProcs)
 3    requested memory         / trace maximum; 1 when unknown (−1)
 4-6  user, group, executable  / trace maximum; 1 when unknown
 7    can run now              1 − 1e-5 if it fits in the free resources now, else 1e-5
(8)   free fraction            free nodes / machine nodes (``features="code+free"``: the paper's
                               "available resources" read literally; same value in every row)
====  =======================  ===============================================================

Padding rows are zeros (the paper; masked anyway) or ``[0,1,1,1,1,1,1,0]`` (``pad="authors"``).

Inspection (SchedInspector, seed 000 §2.1): wait/43,200; requested time / max runtime; requested
processors / MaxProcs; free nodes / machine nodes; runnable (1 − 1e-5 / 1e-5); rejections / 72;
queue delay (Σ over waiting jobs of Δt/max(r, 10), Δt = 600 s, / 7,680 for bsld; Δt per job /
(600·128) for wait), and, in the paper's 8-feature mode, the backfilling contribution (number of
waiting jobs that would be backfilled now against the inspected job's reservation, / 128).
"""
from __future__ import annotations

import numpy as np

MAX_WAIT = 43200.0
_PER_WAIT = 1.0 / MAX_WAIT  # wait → feature 0 (build and build_few multiply by it)
HI = 1.0 - 1e-5
LO = 1e-5
FEW_ROWS = 24  # observations of at most this many jobs: PickObservation.build_few
PICK_FEATURE_SETS = {"code": 8, "code+free": 9}
INSPECT_FEATURE_SETS = {"paper": 8, "code": 7}


def static_pick_columns(walltime, procs, memory, user, group, executable, norms: dict) -> np.ndarray:
    """Rows [req time, procs, memory, user, group, executable] normalised as the authors do."""
    walltime = np.asarray(walltime, dtype=np.float64)
    out = np.empty((len(walltime), 6), dtype=np.float32)
    out[:, 0] = np.minimum(walltime / norms["max_runtime"], HI)
    out[:, 1] = np.minimum(np.asarray(procs, dtype=np.float64) / norms["max_procs"], HI)
    for col, values, key in ((2, memory, "max_memory"), (3, user, "max_user"), (4, group, "max_group"),
                             (5, executable, "max_executable")):
        v = np.asarray(values, dtype=np.float64)
        out[:, col] = np.where(v == -1, 1.0, np.minimum(v / norms[key], HI))
    return out


class PickObservation:
    """Builds the (window × F) observation from per-job arrays indexed by the simulation's job index.

    ``static`` (n_jobs × 6), ``submit`` and ``nodes`` are filled by the owner (the env at reset, the
    policy lazily).  ``build`` takes the visible jobs' indices, the time and the machine state.
    """

    def __init__(self, window: int = 128, features: str = "code", pad: str = "zeros") -> None:
        if features not in PICK_FEATURE_SETS:
            raise ValueError(f"unknown feature set {features!r}; choose from {', '.join(PICK_FEATURE_SETS)}")
        if pad not in ("zeros", "authors"):
            raise ValueError(f"unknown padding {pad!r}; use 'zeros' or 'authors'")
        self.window = window
        self.features = features
        self.n_features = PICK_FEATURE_SETS[features]
        self.pad = pad
        pad_row = np.zeros(self.n_features, dtype=np.float32)
        if pad == "authors":
            pad_row[1:7] = 1.0
        self.pad_row = pad_row
        self._blank = np.tile(pad_row, (window, 1))  # an observation of padding rows only
        self.set_rows(np.zeros((0, 6), dtype=np.float32), np.zeros(0), np.zeros(0, dtype=np.int64))

    def set_rows(self, static: np.ndarray, submit: np.ndarray, nodes: np.ndarray) -> None:
        """The per-job rows, indexed by the simulation's job index (``JobState.idx``).

        They are kept as one (n_jobs × F) float32 table ``rows``: the static columns 1-6, "can run
        now" preset to its low value, the time-dependent columns filled at each ``build``;
        ``static`` is a view of columns 1-6 (writes to it update the table).  ``submit`` and
        ``nodes`` are kept as Python lists too (``build_few`` reads them one by one); write new
        rows with ``put_rows``."""
        rows = np.zeros((len(static), self.n_features), dtype=np.float32)
        rows[:, 1:7] = static
        rows[:, 7] = LO
        self.rows = rows
        self.static = rows[:, 1:7]
        self.submit = np.asarray(submit, dtype=np.float64)
        self.nodes = np.asarray(nodes, dtype=np.int64)
        self._submit_list = self.submit.tolist()
        self._nodes_list = self.nodes.tolist()

    def put_rows(self, where: list[int], static: np.ndarray, submit: list[int], nodes: list[int]) -> None:
        """Write the rows of job indices ``where`` (inside the table ``set_rows`` made)."""
        self.static[where] = static
        self.submit[where] = submit
        self.nodes[where] = nodes
        sub, nod = self._submit_list, self._nodes_list
        for i, s, n in zip(where, self.submit[where].tolist(), self.nodes[where].tolist()):
            sub[i] = s
            nod[i] = n

    def observe(self, visible: list, view, state=None) -> np.ndarray:
        """The observation of the ``visible`` waiting jobs (window order) at the view's time, on
        machine state ``state`` (default ``view.state``; a policy deciding in the middle of a pass
        passes ``CommittedHead.state_now``)."""
        state = view.state if state is None else state
        machine = view.machine
        k = len(visible)
        if k <= FEW_ROWS and not machine.partitioned:  # most picks: see build_few
            ids = [visible[0].idx] if k == 1 else [js.idx for js in visible]
            return self.build_few(ids, view.now, state.free_nodes, machine.total_nodes)
        idx = np.array([js.idx for js in visible], dtype=np.intp)  # (faster than fromiter(map(attrgetter)))
        fits = partition_fits(state, self.nodes[idx]) if machine.partitioned else None
        return self.build(idx, view.now, state.free_nodes, machine.total_nodes, fits)

    def build_few(self, ids: list[int], now: int, free_nodes: int, machine_nodes: int) -> np.ndarray:
        """``build`` on a flat cluster for a few jobs (``ids``: job indices, at least one), the two
        time-dependent columns computed with Python scalars: the same float64 arithmetic, stored
        to float32 the same way, without the dozen NumPy calls of ``build`` (their fixed cost is
        most of an observation of a few jobs; one job waits at about half the picks of a run with
        backfilling)."""
        obs = self._blank.copy()
        if len(ids) == 1:
            obs[0] = self.rows[ids[0]]
        else:
            self.rows.take(ids, axis=0, out=obs[:len(ids)])
        submit = self._submit_list
        nodes = self._nodes_list
        r = 0
        for i in ids:
            wait = (now - submit[i]) * _PER_WAIT
            obs[r, 0] = wait if wait < HI else HI
            if nodes[i] <= free_nodes:
                obs[r, 7] = HI
            r += 1
        if self.n_features > 8:
            obs[:r, 8] = min(free_nodes / machine_nodes, HI)
        return obs.reshape(-1)

    def build(self, idx: np.ndarray, now: int, free_nodes: int, machine_nodes: int, fits=None) -> np.ndarray:
        """Flat float32 observation of length window·F.  ``fits`` (bool array) overrides the flat
        "can run now" test (partitioned machines)."""
        obs = self._blank.copy()
        k = len(idx)
        if k:
            # The environments' hot path: whole rows by take() (a few times cheaper than fancy
            # indexing on these small arrays), then the time-dependent columns.
            o = obs[:k]
            self.rows.take(idx, axis=0, out=o)
            o[:, 0] = np.minimum((now - self.submit.take(idx)) * _PER_WAIT, HI)
            if fits is None:
                fits = self.nodes.take(idx) <= free_nodes
            o[:, 7][fits] = HI  # the rows hold LO
            if self.n_features > 8:
                o[:, 8] = min(free_nodes / machine_nodes, HI)
        return obs.reshape(-1)


class ArrivedRows:
    """Fills a ``PickObservation``'s rows for the jobs a policy has seen enter the queue.

    A trained policy knows nothing of jobs that have not arrived: it reads ``view.entry_log`` from
    its own cursor and computes the rows of the new jobs in one vectorised call when it next needs
    an observation.  ``extras`` maps a job id to (processors, memory, user, group, executable)
    (``RLTrace.extras``); without an entry, processors = nodes and the others count as unknown
    (memory and executable −1; user and group from the job).
    """

    def __init__(self, obs: PickObservation, norms: dict, extras: dict | None) -> None:
        self.obs = obs
        self.norms = norms
        self.extras = extras or {}
        self.run_id = None
        self.cursor = 0
        self.n_rows = 0

    def catch_up(self, view) -> None:
        if view.run_id != self.run_id:
            self.run_id = view.run_id
            self.cursor = 0
            self.n_rows = 0
            self.obs.set_rows(np.zeros((0, 6), dtype=np.float32), np.zeros(0), np.zeros(0, dtype=np.int64))
        log = view.entry_log
        new = [js for js in log[self.cursor:] if js.idx >= self.n_rows]
        self.cursor = len(log)
        if not new:
            return
        infos = [js.info for js in new]
        ex = self.extras
        rows = [ex.get(i.id) or (i.nodes, -1, i.user, i.group, -1) for i in infos]
        procs, mem, user, group, exe = (list(col) for col in zip(*rows))
        static = static_pick_columns([i.walltime for i in infos], procs, mem, user, group, exe, self.norms)
        n = max(js.idx for js in new) + 1
        ob = self.obs
        if n > len(ob.submit):  # grow by doubling: rows are added a few at a time
            cap = max(n, 2 * len(ob.submit), 64)
            k = self.n_rows
            grown = (np.zeros((cap, 6), dtype=np.float32), np.zeros(cap, dtype=np.float64),
                     np.zeros(cap, dtype=np.int64))
            grown[0][:k], grown[1][:k], grown[2][:k] = ob.static[:k], ob.submit[:k], ob.nodes[:k]
            ob.set_rows(*grown)
        ob.put_rows([js.idx for js in new], static, [i.submit for i in infos], [i.nodes for i in infos])
        self.n_rows = max(self.n_rows, n)


def partition_fits(state, nodes: np.ndarray) -> np.ndarray:
    """Whether each job size has a free partition now (cached per distinct size)."""
    cache: dict[int, bool] = {}
    out = np.empty(len(nodes), dtype=bool)
    for i, n in enumerate(nodes.tolist()):
        v = cache.get(n)
        if v is None:
            v = state.find(n) is not None
            cache[n] = v
        out[i] = v
    return out
