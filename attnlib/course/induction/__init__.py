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

# Every public name of the four modules, so `from attnlib.course.induction import X` and
# `ind.X` keep working; each module's own __all__ says what it holds.
from attnlib.course.induction import analysis, data, records, training
from attnlib.course.induction.analysis import *  # noqa: F403
from attnlib.course.induction.data import *  # noqa: F403
from attnlib.course.induction.records import *  # noqa: F403
from attnlib.course.induction.training import *  # noqa: F403

__all__ = [*data.__all__, *analysis.__all__, *training.__all__, *records.__all__]
