"""Controls for explorers: thin factories over ipywidgets
(keyboard: arrow keys, Home/End, PageUp/Down).

Sliders (``float_slider``, ``int_slider``, ``log_slider``, ``selection_slider``) are *fast* by
default: the explorer precomputes a frame for every step of their range and the browser switches
among them while the hand drags (see :mod:`attnlib.widgets.framework.explorer`). Choose ``step`` so
a slider has at most a few hundred steps (a 2-D grid of two sliders: at most ~60 x 60). ``toggle``
and ``dropdown`` are *slow*: changing one asks the kernel to recompute the frames.
"""

from __future__ import annotations

import math
import numbers

__all__ = [
    "float_slider",
    "int_slider",
    "log_slider",
    "selection_slider",
    "toggle",
    "dropdown",
    "STYLE",
]

STYLE = {"description_width": "initial"}


def _layout(width):
    import ipywidgets as w

    return w.Layout(width=width)


def _check_range(description, value, lo, hi):
    for what, x in (("min", lo), ("max", hi), ("value", value)):
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
            raise TypeError(
                f"{what} of slider {description!r} must be a finite number, got "
                f"{type(x).__name__} ({x!r})"
            )
    if not lo < hi:
        raise ValueError(
            f"min={lo} must be less than max={hi} for slider {description!r} "
            f"(swap them: min={hi}, max={lo})"
            if lo > hi
            else f"min={lo} must be less than max={hi} for slider {description!r}"
        )
    if not lo <= value <= hi:
        raise ValueError(
            f"value={value} must lie in [min={lo}, max={hi}] for slider {description!r}"
        )


def _slider(kind: str, description: str, width: str, continuous_update: bool, **kw):
    """The one place a slider is made: ``ipywidgets.<kind>`` (e.g. ``"FloatSlider"``) with the
    description, the shared style and layout, and ``kw`` (value, range, step, format) as given."""
    import ipywidgets as w

    return getattr(w, kind)(
        description=description,
        continuous_update=continuous_update,
        style=STYLE,
        layout=_layout(width),
        **kw,
    )


def float_slider(
    description: str,
    min: float,
    max: float,
    value: float,
    *,
    step: float = 0.05,
    readout_format: str = ".2f",
    width: str = "300px",
    continuous_update: bool = True,
):
    """A ``FloatSlider`` with a description, a fixed range and live updates while dragging."""
    _check_range(description, value, min, max)
    if not step > 0:
        raise ValueError(f"step must be > 0 for slider {description!r}, got {step}")
    return _slider(
        "FloatSlider", description, width, continuous_update,
        value=value, min=min, max=max, step=step, readout_format=readout_format,
    )  # fmt: skip


def int_slider(
    description: str,
    min: int,
    max: int,
    value: int,
    *,
    step: int = 1,
    width: str = "300px",
    continuous_update: bool = True,
):
    """An ``IntSlider`` with a description and a fixed range."""
    _check_range(description, value, min, max)
    return _slider(
        "IntSlider", description, width, continuous_update,
        value=value, min=min, max=max, step=step,
    )  # fmt: skip


def log_slider(
    description: str,
    min_exp: float,
    max_exp: float,
    value: float,
    *,
    base: float = 10.0,
    step: float = 0.1,
    readout_format: str = ".3g",
    width: str = "300px",
    continuous_update: bool = True,
):
    """A ``FloatLogSlider`` from ``base**min_exp`` to ``base**max_exp`` (steps in the exponent)."""
    _check_range(description, value, base**min_exp, base**max_exp)
    return _slider(
        "FloatLogSlider", description, width, continuous_update,
        value=value, base=base, min=min_exp, max=max_exp, step=step,
        readout_format=readout_format,
    )  # fmt: skip


def selection_slider(
    description: str, options, value=None, *, width: str = "300px", continuous_update: bool = True
):
    """A ``SelectionSlider`` over ``options`` (e.g. the widths 1, 2, 4, ..., 1024)."""

    options = list(options)
    value = options[0] if value is None else value
    if value not in options:
        raise ValueError(
            f"value={value!r} is not one of the options {options} of slider {description!r}"
        )
    return _slider(
        "SelectionSlider", description, width, continuous_update, options=options, value=value
    )


def toggle(description: str, value: bool = False, *, width: str = "auto"):
    """A ``Checkbox`` (on/off control)."""
    import ipywidgets as w

    return w.Checkbox(
        value=value, description=description, indent=False, style=STYLE, layout=_layout(width)
    )


def dropdown(description: str, options, value=None, *, width: str = "260px"):
    """A ``Dropdown`` over ``options`` (a list, or a list of ``(label, value)`` pairs)."""
    import ipywidgets as w

    kw = {} if value is None else {"value": value}
    return w.Dropdown(
        options=options, description=description, style=STYLE, layout=_layout(width), **kw
    )
