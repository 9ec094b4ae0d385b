"""Induction heads in a small GPT: the data, the training run and the per-head scores (notebook 11).

The package's modules: :mod:`.data` (the repeat task and the loss on each occurrence),
:mod:`.analysis` (the per-head circuit scores), :mod:`.training` (the setup, the run and its
snapshots), :mod:`.records` (the shipped runs' file and what is read from a record); every public
name is re-exported here.

The task: random tokens in which one segment (of ``segment`` tokens, or of a length drawn per
sequence from ``min_segment .. segment``) occurs twice, the second time after a random gap, so the
only way to predict the second occurrence is to find the first one in the context and copy what
followed it (an induction head; Olsson et al. 2022, Elhage et al. 2021).

Everything here is measured, never assumed: which head attends to the previous token, which one
attends to the token after the earlier occurrence of the current token (prefix matching), whether
its output raises that token's logit (copying), whether its keys read the first head's output
(K-composition, by weights and by removing that output from the keys only), and what removing a
head (``head_mask``) does to the loss on the second occurrence.

Positions are 0-based. A sequence's first occurrence starts at ``first``, the second at
``second = first + length + gap``. "The loss on an occurrence" is the mean next-token loss of
predicting its tokens 1 .. length - 1 (its token 0 cannot be known from the first occurrence),
pooled over the batch's tokens (with per-row lengths, a row counts as many times as it has
tokens to predict).
"""

from attnlib.course.induction.analysis import (
    ablation_table,
    composition_scores,
    copying_scores,
    head_scores,
    induction_scores,
    key_path_induction,
    lookback_profile,
    match_profile,
    previous_token_scores,
    random_composition_baseline,
)
from attnlib.course.induction.data import RepeatBatch, RepeatTask, occurrence_losses, repeat_batch
from attnlib.course.induction.records import (
    RUN_FILE,
    load_run,
    phase_change,
    save_runs,
    snapshot_model,
)
from attnlib.course.induction.training import (
    FIXED_LENGTH,
    SHIPPED,
    TrainRun,
    TrainSetup,
    induction_model,
    train_induction,
)

__all__ = [
    "RepeatTask",
    "RepeatBatch",
    "TrainSetup",
    "TrainRun",
    "repeat_batch",
    "occurrence_losses",
    "previous_token_scores",
    "induction_scores",
    "lookback_profile",
    "match_profile",
    "copying_scores",
    "composition_scores",
    "random_composition_baseline",
    "key_path_induction",
    "ablation_table",
    "head_scores",
    "train_induction",
    "induction_model",
    "load_run",
    "RUN_FILE",
    "FIXED_LENGTH",
    "SHIPPED",
    "save_runs",
    "snapshot_model",
    "phase_change",
]
