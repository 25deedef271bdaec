"""Trained agents as ordinary rtsched policies (``decide(view) -> list[Decision]``): the loader and
what every agent's policy shares.

``load_policy`` / ``policy_from_model`` read a model file (``rtsched.rl.modelfiles.load_model``)
and hand it to its agent's ``policy.from_model`` (the agents table, ``rtsched.rl.agents``):
``rtsched.rl.rlscheduler.policy.RLSchedulerPolicy``, ``rtsched.rl.inspector.policy.InspectedPolicy``,
``rtsched.rl.splitwindow.policy.SplitWindowPolicy``, ``rtsched.rl.rlschert.policy.RLSchertPolicy``,
``rtsched.rl.rtmix.policy.RtMixPolicy``.

The committed-head policies are meant for ``Simulator(..., event_order="rlscheduler")`` (the event
order they were trained in) but run in any event order.  Per-job features beyond the core ``Job``
(processors as requested, memory, executable) come from ``extras`` {job id: (procs, memory, user,
group, executable)} (``RLTrace.extras``); without them processors = nodes and the others count as
unknown.  Normalisation constants default to the model's training trace; pass ``norms`` (e.g.
``trace.norms()``) to normalise by the evaluated trace instead, as the authors' scripts do.
"""
from __future__ import annotations

import numpy as np
import torch

from heuristics.backfill import normalize_backfill
from heuristics.committed import COMMITTED_BACKFILLS
from rtsched.errors import OptionError
from rtsched.rl.agents import agent_part
from rtsched.rl.modelfiles import LoadedModel, ModelFileError, load_model


def model_norms(model: LoadedModel, norms: dict | None) -> dict:
    """The feature normalisation constants: ``norms`` when given, else the model's own."""
    out = dict(norms or model.norms)
    if not out:
        raise ModelFileError(f"{model.path}: the model records no normalisation constants (a stable-baselines3 zip "
                             "saved without rtsched.json); evaluate it with rtsched rl evaluate (the trace's "
                             "constants) or save it with rtsched.rl.sb3.save_model / attach_env")
    return out


def choose_action(logits: np.ndarray, greedy: bool, gen: torch.Generator) -> int:
    """Greedy: the first maximal logit (as torch.argmax); otherwise a sample from the softmax."""
    if greedy:
        return int(np.argmax(logits))
    probs = torch.softmax(torch.from_numpy(np.asarray(logits, dtype=np.float32)), -1)
    return int(torch.multinomial(probs, 1, generator=gen))


def policy_from_model(path: str, **kwargs):
    """The right policy class for a model file: its agent's ``policy.from_model`` (the agents table)."""
    model = load_model(path)
    return agent_part(model.agent, "policy").from_model(model, **kwargs)


class ModelPolicyError(OptionError):
    """A trained model asked to schedule in a way it cannot (the message names the model)."""


def load_policy(path, backfill=None, **options):
    """A trained model (file or training folder) as a core policy: what the policy registry calls
    for a model path (``rtsched simulate --policy MODEL_PATH``, grids, ``compare``).

    ``backfill``: ``None`` keeps the backfilling the model was trained with; otherwise ``none``,
    ``rlscheduler`` or ``easy`` (the rules a committed-head policy implements).  Other options go to
    ``RLSchedulerPolicy`` / ``InspectedPolicy`` (``greedy``, ``norms``, ``extras``, ``base``, ``seed``).
    Raises ``ModelFileError`` naming the file for a missing, corrupt or mismatched model.
    """
    if backfill is not None:
        try:
            backfill = normalize_backfill(backfill, COMMITTED_BACKFILLS)
        except ValueError:
            raise ModelPolicyError(f"{path}: a trained model schedules with backfilling "
                                   f"{', '.join(COMMITTED_BACKFILLS)} (or its training setting when none is given), "
                                   f"not {backfill!r}") from None
    return policy_from_model(path, backfill=backfill, **options)
