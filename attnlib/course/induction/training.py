"""Training notebook 11's attention-only GPT on the repeat task, with its evaluations and
snapshots (:class:`TrainSetup` in, :class:`TrainRun` out)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from attnlib.course.induction.analysis import head_scores
from attnlib.course.induction.data import RepeatBatch, RepeatTask, repeat_batch
from attnlib.models.gpt import GPT, GPTConfig
from attnlib.util._checks import check_bool, check_int
from attnlib.util.i18n import _

__all__ = [
    "TrainSetup",
    "TrainRun",
    "induction_model",
    "train_induction",
    "FIXED_LENGTH",
    "SHIPPED",
]


@dataclass(frozen=True)
class TrainSetup:
    """How notebook 11's models are trained (the shipped run used exactly these).

    Attributes:
        task: the data.
        num_layers, num_heads, d_model, positions: the attention-only GPT's shape.
        init: ``"gpt2"`` (the model's own GPT-2 initialisation: every weight normal with s.d.
            0.02) or ``"torch"``: then every ``nn.Linear`` (the heads' W_Q, W_K, W_V, W_O) is
            re-drawn with PyTorch's default (Kaiming-uniform, s.d. ``1/sqrt(3 * fan_in)``, 0.072 at
            width 64; biases uniform), seeded by ``seed + 100``. With the small GPT-2 weights the
            scores barely depend on the tokens, so the plateau is much longer.
        steps, batch_size, lr, weight_decay: AdamW on the mean next-token loss.
        seed: seeds the weights (``torch.manual_seed``) and, plus 1, the data generator.
        eval_size, eval_seed: the fixed held-out batch every evaluation uses.
        eval_every: steps between evaluations (and snapshots).
    """

    task: RepeatTask = field(default_factory=lambda: RepeatTask(segment=16, min_segment=2))
    num_layers: int = 2
    num_heads: int = 2
    d_model: int = 64
    positions: str = "learned"
    init: str = "torch"
    steps: int = 6000
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.0
    seed: int = 1
    eval_size: int = 256
    eval_seed: int = 12345
    eval_every: int = 100

    def __post_init__(self):
        if self.init not in ("gpt2", "torch"):
            raise ValueError(f"init must be 'gpt2' or 'torch', got {self.init!r}")

    def model_config(self) -> GPTConfig:
        return GPTConfig(
            vocab_size=self.task.vocab_size,
            max_len=self.task.seq_len,
            d_model=self.d_model,
            num_heads=self.num_heads,
            num_layers=self.num_layers,
            attention_only=True,
            positions=self.positions,
        )

    def eval_batch(self) -> RepeatBatch:
        return repeat_batch(
            self.task, self.eval_size, torch.Generator().manual_seed(self.eval_seed)
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> TrainSetup:
        d = dict(d)
        d["task"] = RepeatTask(**d["task"])
        return TrainSetup(**d)


@dataclass
class TrainRun:
    """What a training run recorded.

    Attributes:
        setup: the :class:`TrainSetup`.
        losses: ``(steps,)`` the training loss of every step (before its update).
        eval_steps: ``(E,)`` the steps evaluated (0 = before training).
        metrics: name -> ``(E,)`` or ``(E, layers, H)`` tensors on the held-out batch
            (:func:`head_scores`).
        snapshots: the model's ``state_dict`` (float16) at the steps ``snapshot_steps``.
        seconds: wall time of the training loop.
        snapshot_steps: ``(N,)`` the steps of the snapshots (a subset of ``eval_steps``).
    """

    setup: TrainSetup
    losses: torch.Tensor
    eval_steps: torch.Tensor
    metrics: dict[str, torch.Tensor]
    snapshots: list[dict[str, torch.Tensor]]
    seconds: float
    snapshot_steps: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))

    def eval_index(self, step: int) -> int:
        """The index of ``step`` in ``eval_steps``."""
        hit = (self.eval_steps == step).nonzero()
        if not len(hit):
            raise ValueError(
                f"step {step} was not evaluated; eval_steps are {self.eval_steps.tolist()}"
            )
        return int(hit[0, 0])


def induction_model(setup: TrainSetup | None = None) -> GPT:
    """The untrained attention-only GPT of ``setup``, seeded with ``setup.seed`` inside
    ``torch.random.fork_rng`` (the caller's random state is left as it was); with ``init =
    "torch"`` its ``nn.Linear`` layers then re-drawn by ``reset_parameters`` (seed ``seed +
    100``)."""
    setup = TrainSetup() if setup is None else setup
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(setup.seed)
        model = GPT(setup.model_config())
        if setup.init == "torch":
            torch.manual_seed(setup.seed + 100)
            for module in model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.reset_parameters()
    return model


def train_induction(
    setup: TrainSetup | None = None,
    *,
    steps: int | None = None,
    keep_snapshots: bool = False,
    progress: bool = True,
) -> tuple[GPT, TrainRun]:
    """Train :func:`induction_model` on :class:`RepeatTask` batches, evaluating every
    ``eval_every`` steps on the fixed held-out batch.

    Args:
        setup: the :class:`TrainSetup` (None: the notebook's).
        steps: stop after this many steps (default ``setup.steps``); the first ``steps`` of a
            longer run are the same steps (same data, same updates).
        keep_snapshots: keep a float16 ``state_dict`` at every evaluated step.
        progress: show a ``tqdm.auto`` progress bar with the loss and the in-context score.

    Returns:
        ``(model, run)``: the trained model (eval mode, on the CPU) and its :class:`TrainRun`.
    """
    from tqdm.auto import tqdm  # type: ignore[import-untyped]

    setup = TrainSetup() if setup is None else setup
    if not isinstance(setup, TrainSetup):
        raise TypeError(f"setup must be a TrainSetup, got {type(setup).__name__}")
    n = setup.steps if steps is None else check_int("steps", steps, min=0, max=setup.steps)
    check_bool("keep_snapshots", keep_snapshots)
    check_bool("progress", progress)
    model = induction_model(setup)
    gen = torch.Generator().manual_seed(setup.seed + 1)
    held = setup.eval_batch()
    opt = torch.optim.AdamW(model.parameters(), lr=setup.lr, weight_decay=setup.weight_decay)
    losses: list[float] = []
    eval_steps: list[int] = []
    records: list[dict[str, torch.Tensor]] = []
    snaps: list[dict[str, torch.Tensor]] = []

    def evaluate(step: int) -> None:
        model.eval()
        records.append(head_scores(model, held))
        eval_steps.append(step)
        if keep_snapshots:
            snaps.append(
                {k: v.detach().to(torch.float16).clone() for k, v in model.state_dict().items()}
            )
        model.train()

    start = time.perf_counter()
    bar = tqdm(
        total=n,
        desc=_("training the 2-layer model") if setup.num_layers == 2 else _("training"),
        disable=not progress,
    )
    try:
        model.train()
        for step in range(n + 1):
            if step % setup.eval_every == 0 or step == n:
                evaluate(step)
                r = records[-1]
                bar.set_postfix(
                    loss=f"{float(r['loss']):.2f}", in_context=f"{float(r['in_context']):+.2f}"
                )
            if step == n:
                break
            b = repeat_batch(setup.task, setup.batch_size, gen)
            logits = model(b.ids).logits  # (B, T, V)
            loss = F.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), b.ids[:, 1:].reshape(-1)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            bar.update(1)
    finally:
        bar.close()
        model.eval()
    metrics = {k: torch.stack([r[k] for r in records]) for k in records[0]}
    run = TrainRun(
        setup=setup,
        losses=torch.tensor(losses),
        eval_steps=torch.tensor(eval_steps),
        metrics=metrics,
        snapshots=snaps,
        seconds=time.perf_counter() - start,
        snapshot_steps=torch.tensor(eval_steps if keep_snapshots else [], dtype=torch.long),
    )
    return model, run


#: The first setup tried for notebook 11: every segment 16 tokens long (then a different circuit
#: forms: layer-0 heads that look 16 and 15 back, no previous-token head).
FIXED_LENGTH = TrainSetup(
    task=RepeatTask(segment=16), init="gpt2", steps=3000, seed=0, eval_every=75
)

#: The setups of the shipped runs: notebook 11's model, its 1-layer control, and the 2-layer
#: model of the fixed-length setup (its record and final weights, no snapshots).
SHIPPED = {
    "two_layer": TrainSetup(),
    "one_layer": TrainSetup(num_layers=1),
    "fixed_length": FIXED_LENGTH,
}

#: The shipped runs (``python -m attnlib.course.induction --write``): the 2-layer model's
