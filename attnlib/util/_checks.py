"""Input validation shared by every attnlib function.

Each helper raises a ``ValueError`` or ``TypeError`` that names the argument and the shapes or
values involved, so a wrong call fails at the boundary instead of deep inside torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = [
    "check_tensor",
    "check_same_device",
    "check_same_dtype",
    "check_last_dim_match",
    "check_mask",
    "check_valid_lens",
    "check_valid_lens_shape",
    "check_valid_lens_range",
    "read_bounds",
    "check_positive_int",
    "check_scale",
    "check_number_above",
    "check_int",
    "check_probability",
    "check_matches_parameters",
    "check_float_dtype",
    "check_bool",
    "check_has_keys",
    "check_config_sizes",
]


def check_tensor(
    name: str, x, *, ndim_min: int | None = None, ndim: int | None = None, floating: bool = True
) -> torch.Tensor:
    """Check that ``x`` is a tensor (floating point unless ``floating=False``) of enough dims."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor (float16, bfloat16, float32 or float64), "
            f"got dtype {x.dtype}; convert it with {name}.float()"
        )
    if ndim is not None and x.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")
    if ndim_min is not None and x.dim() < ndim_min:
        raise ValueError(
            f"{name} must have at least {ndim_min} dimension(s), got shape {tuple(x.shape)}"
        )
    return x


def _first_mismatch(attr: str, tensors: dict) -> tuple[str, torch.Tensor, str, torch.Tensor] | None:
    """The first tensor (``None`` ignored) whose ``attr`` differs from the first one's."""
    items = [(n, t) for n, t in tensors.items() if isinstance(t, torch.Tensor)]
    for name, t in items[1:]:
        if getattr(t, attr) != getattr(items[0][1], attr):
            return (*items[0], name, t)
    return None


def check_same_device(**tensors: torch.Tensor | None) -> None:
    """Check that all given tensors (``None`` ignored) live on one device."""
    if bad := _first_mismatch("device", tensors):
        first_name, first, name, t = bad
        raise ValueError(
            f"{first_name} is on {first.device} but {name} is on {t.device}; "
            f"move them to one device (e.g. {name}.to({first_name}.device))"
        )


def check_same_dtype(**tensors: torch.Tensor | None) -> None:
    """Check that all given floating tensors (``None`` ignored) share one dtype."""
    if bad := _first_mismatch("dtype", tensors):
        first_name, first, name, t = bad
        raise TypeError(
            f"{first_name} has dtype {first.dtype} but {name} has dtype {t.dtype}; "
            "use one dtype for all inputs"
        )


def check_last_dim_match(
    name_a: str,
    a: torch.Tensor,
    name_b: str,
    b: torch.Tensor,
    what: str,
    dim_a: int = -1,
    dim_b: int = -1,
) -> None:
    """Check ``a.shape[dim_a] == b.shape[dim_b]``; the message calls that size ``what``."""
    if a.shape[dim_a] != b.shape[dim_b]:
        raise ValueError(
            f"{name_a} has {what}={a.shape[dim_a]} but {name_b} has {what}={b.shape[dim_b]} "
            f"({name_a} shape {tuple(a.shape)}, {name_b} shape {tuple(b.shape)})"
        )


def check_mask(
    name: str,
    mask,
    target_shape: torch.Size | tuple,
    device: torch.device,
) -> torch.Tensor:
    """Check a boolean or float mask that must broadcast to ``target_shape`` ``(..., L, S)``."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(
            f"{name} must be a boolean mask (True = may attend) or a float mask (added to the "
            f"scores), got dtype {mask.dtype}"
        )
    if mask.device != device:
        raise ValueError(f"{name} is on {mask.device} but the scores are on {device}")
    target_shape = tuple(target_shape)
    try:
        shape = torch.broadcast_shapes(mask.shape, target_shape)
    except RuntimeError:
        shape = None
    if shape != target_shape:
        raise ValueError(
            f"{name} has shape {tuple(mask.shape)}, which does not broadcast to the scores' "
            f"shape {target_shape} (..., L, S)"
        )
    return mask


def check_valid_lens(
    valid_lens,
    batch_shape: tuple | None,
    num_queries: int | None,
    num_keys: int,
    device: torch.device | None,
    *,
    per_query: bool = True,
    min_len: int = 0,
    keys: str = "S",
    keys_what: str = "the number of keys",
    where: str = "the scores",
) -> tuple[int, int]:
    """The one check of ``valid_lens``: integers in ``[min_len, num_keys]``, shape ``(B,)`` (or
    ``(B, L)``, one length per query, if ``per_query``) matching the batch.

    It is :func:`check_valid_lens_shape`, one host read (:func:`read_bounds`), then
    :func:`check_valid_lens_range`; a caller that also reads other tensors' bounds calls the
    three itself, so that one transfer serves them all.

    Args:
        valid_lens: what the caller was given.
        batch_shape: the scores' leading axes ``(B, ...)`` (``()``: no batch axis, an error);
            ``None`` skips the batch check.
        num_queries: L, which a ``(B, L)`` ``valid_lens`` must match (``None``: any L).
        num_keys: the largest valid length (S, or L for a sequence of tokens).
        device: where the lengths must be (``None``: anywhere).
        per_query: allow ``(B, L)``; if False only ``(B,)``, one length per sequence.
        min_len: the smallest valid length (1 where every sequence has a first token).
        keys, keys_what, where: how the messages name the bound and the tensor compared with.

    Returns:
        ``(min, max)`` of the lengths (``(min_len, min_len)`` if empty), so a caller knows,
        without another read, whether a row can be fully hidden (``min == 0``).
    """
    check_valid_lens_shape(
        valid_lens,
        batch_shape,
        num_queries,
        device,
        per_query=per_query,
        where=where,
        num_keys=num_keys,
    )
    (bounds,) = read_bounds(valid_lens)
    return check_valid_lens_range(bounds, num_keys, min_len=min_len, keys=keys, keys_what=keys_what)


def check_valid_lens_shape(
    valid_lens,
    batch_shape: tuple | None,
    num_queries: int | None,
    device: torch.device | None,
    *,
    per_query: bool = True,
    where: str = "the scores",
    num_keys: int | None = None,
) -> torch.Tensor:
    """The part of :func:`check_valid_lens` that reads no value: type, dtype, device, shape."""
    if not isinstance(valid_lens, torch.Tensor):
        raise TypeError(f"valid_lens must be a torch.Tensor, got {type(valid_lens).__name__}")
    if valid_lens.is_floating_point() or valid_lens.is_complex() or valid_lens.dtype == torch.bool:
        raise TypeError(
            f"valid_lens must hold integers, got dtype {valid_lens.dtype} (valid_lens must be "
            "an integer tensor, e.g. int64)"
        )
    if device is not None and valid_lens.device != device:
        raise ValueError(f"valid_lens is on {valid_lens.device} but {where} are on {device}")
    if valid_lens.dim() != 1 and not (per_query and valid_lens.dim() == 2):
        shape = tuple(valid_lens.shape)
        if per_query:
            raise ValueError(f"valid_lens must be 1-D (B,) or 2-D (B, L), got shape {shape}")
        raise ValueError(f"valid_lens must have shape (B,), got {shape}: one length per sequence")
    if batch_shape is not None:
        if not batch_shape:
            raise ValueError(
                "valid_lens needs a batch axis: scores must be (B, ..., L, S), "
                f"got (L, S) = ({num_queries}, {num_keys})"
            )
        if valid_lens.shape[0] != batch_shape[0]:
            expected = f"({batch_shape[0]},)" + (f" or ({batch_shape[0]}, L)" if per_query else "")
            raise ValueError(
                f"valid_lens has {valid_lens.shape[0]} rows but the batch size is "
                f"{batch_shape[0]} (expected shape {expected}, one length per sequence)"
            )
    if num_queries is not None and valid_lens.dim() == 2 and valid_lens.shape[1] != num_queries:
        raise ValueError(
            f"valid_lens of shape {tuple(valid_lens.shape)} gives one length per query, "
            f"but there are L={num_queries} queries"
        )
    return valid_lens


def check_valid_lens_range(
    bounds: tuple[int, int] | None,
    num_keys: int,
    *,
    min_len: int = 0,
    keys: str = "S",
    keys_what: str = "the number of keys",
) -> tuple[int, int]:
    """The part of :func:`check_valid_lens` that needs the values: ``min_len <= lens <= num_keys``,
    given the ``(min, max)`` that :func:`read_bounds` read (``None``: no lengths)."""
    if bounds is None:
        return min_len, min_len
    lo, hi = bounds
    limits = f"valid_lens must lie in [{min_len}, {keys}={num_keys}] ({keys_what})"
    if lo < min_len:
        raise ValueError(f"{limits}: valid_lens must be >= {min_len}, got {lo}")
    if hi > num_keys:
        raise ValueError(f"{limits}: valid_lens must be <= {keys}={num_keys}, got {hi}")
    return lo, hi


def read_bounds(*tensors: torch.Tensor | None) -> list[tuple[int, int] | None]:
    """``(min, max)`` of each integer tensor (``None`` for an empty one or ``None``), read from the
    device in ONE transfer: the only place a check waits for the device (on a GPU, a sync)."""
    present = [t for t in tensors if t is not None and t.numel()]
    if not present:
        return [None] * len(tensors)
    flat = torch.cat([torch.stack(torch.aminmax(t)).to(torch.int64) for t in present])
    values = iter(flat.tolist())  # the one host read
    return [(next(values), next(values)) if t is not None and t.numel() else None for t in tensors]


def check_positive_int(name: str, value) -> int:
    """Check that ``value`` is a positive Python int (bool excluded)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def check_config_sizes(config, names: Sequence[str]) -> None:
    """Check a model config's sizes: every field in ``names`` a positive int, and ``num_heads``
    dividing ``d_model`` (both configs, the toy seq2seq and MiniLM, split D into H heads)."""
    for name in names:
        check_positive_int(name, getattr(config, name))
    if config.d_model % config.num_heads:
        raise ValueError(f"num_heads={config.num_heads} must divide d_model={config.d_model}")


def check_scale(scale) -> None:
    """Check an attention ``scale``: ``None`` or a finite real number."""
    if scale is None:
        return
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale must be a number or None, got {type(scale).__name__}")
    if scale != scale or scale in (float("inf"), float("-inf")):
        raise ValueError(f"scale must be finite, got {scale}")


def check_number_above(name: str, value, lower: float) -> float:
    """Check that ``value`` is a finite real number (bool excluded) greater than ``lower``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (value > lower and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number > {lower:g}, got {value}")
    return float(value)


def check_int(name: str, value, *, min: int | None = None, max: int | None = None) -> int:
    """Check that ``value`` is a Python int (bool excluded) in ``[min, max]`` (None: unbounded).

    A wrong type is a ``TypeError``; an int out of range is a ``ValueError``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if min is not None and value < min:
        raise ValueError(f"{name} must be >= {min}, got {value}")
    if max is not None and value > max:
        raise ValueError(f"{name} must be <= {max}, got {value}")
    return value


def check_bool(name: str, x) -> bool:
    """A flag must be a real ``bool`` (``is_causal="yes"`` is a ``TypeError``, not truthy)."""
    if not isinstance(x, bool):
        raise TypeError(f"{name} must be True or False, got {type(x).__name__} ({x!r})")
    return x


def check_probability(name: str, p, *, allow_one: bool = False) -> float:
    """Check a probability such as a dropout rate: a real number in ``[0, 1)`` (``[0, 1]`` if
    ``allow_one``). A wrong type is a ``TypeError``; a number out of range a ``ValueError``."""
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(p).__name__} ({p!r})")
    upper_ok = p <= 1.0 if allow_one else p < 1.0
    if not (p >= 0.0 and upper_ok):
        raise ValueError(f"{name} must be in [0, 1{']' if allow_one else ')'}, got {p}")
    return float(p)


def check_has_keys(name: str, x: torch.Tensor, dim: int = -2, **others: torch.Tensor) -> None:
    """Attention needs at least one key: raise ``ValueError`` when ``x.shape[dim]`` (S) is 0.

    A softmax over an empty set of keys has no value (its denominator is an empty sum), so an
    empty key set is an error rather than a silent zero. ``others`` are shown in the message.
    """
    if x.shape[dim] == 0:
        shapes = ", ".join(f"{n} {tuple(t.shape)}" for n, t in {name: x, **others}.items())
        raise ValueError(
            f"attention needs at least one key, but {name} has S = 0 keys along "
            f"dim {dim} ({shapes})"
        )


_DTYPE_METHODS = {
    torch.float16: "half",
    torch.bfloat16: "bfloat16",
    torch.float32: "float",
    torch.float64: "double",
}


def check_matches_parameters(module: str, param: torch.Tensor, **tensors: torch.Tensor) -> None:
    """Inputs to a module must have its parameters' dtype and device (``nn.Linear`` would fail
    deep inside torch with "mat1 and mat2 must have the same dtype"): name both and the fix.

    Args:
        module: how the message names the module (e.g. ``"MultiHeadAttention"``).
        param: one of its parameters (all share a dtype and device).
        tensors: the inputs by argument name (``None`` ignored).
    """
    for name, x in tensors.items():
        if not isinstance(x, torch.Tensor):
            continue
        if x.device != param.device:
            raise ValueError(
                f"{name} is on {x.device} but the {module}'s parameters are on {param.device}; "
                f"move the input with {name}.to({str(param.device)!r}) or the module with "
                f".to({str(x.device)!r})"
            )
        if x.dtype != param.dtype:
            to = _DTYPE_METHODS.get(param.dtype)
            back = _DTYPE_METHODS.get(x.dtype)
            fix = f"convert the input with {name}.{to}()" if to else f"{name}.to({param.dtype})"
            other = f" or the module with .{back}()" if back else ""
            raise TypeError(
                f"{name} has dtype {x.dtype} but the {module}'s parameters are {param.dtype}; "
                f"{fix}{other}"
            )


def check_float_dtype(name: str, dtype) -> torch.dtype:
    """A ``dtype`` argument must be a floating ``torch.dtype`` (an integer one would truncate
    sines and weights to 0s and 1s)."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype such as torch.float32, got {dtype!r}")
    if not dtype.is_floating_point:
        raise TypeError(
            f"{name} must be a floating torch.dtype (torch.float16, torch.bfloat16, "
            f"torch.float32 or torch.float64), got {dtype}; the values would be truncated"
        )
    return dtype
