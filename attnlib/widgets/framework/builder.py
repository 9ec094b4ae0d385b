"""The builder decorator: an explorer records the arguments it was built with, by itself.

``@builder("name")`` on a function returning an
:class:`~attnlib.widgets.framework.explorer.Explorer` binds the call's arguments to the function's
signature (defaults included), keeps the JSON-able ones as ``ex.args`` and sets ``ex.name``, so
``BUILDERS[name](**ex.args)`` rebuilds the same explorer (the browser test does) and no builder
restates its own signature.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from attnlib.widgets.framework.readout import to_py


class _Nameable(Protocol):
    def _named(self, name: str, args: dict[str, Any]) -> None: ...


#: An explorer (the decorator sets its ``name`` and ``args``). This module imports no Explorer,
#: so the framework's modules import each other one way: explorer -> builder.
Explorer = TypeVar("Explorer", bound=_Nameable)

__all__ = ["builder"]


def _jsonable(x) -> Any:
    """``x`` as JSON (tuples -> lists, tensors and arrays -> nested lists), or raise TypeError."""
    x = to_py(x)
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"not JSON-able: {type(x).__name__}")


def builder(name: str):
    """Decorator of an explorer builder registered as ``BUILDERS[name]``: the explorer it returns
    gets ``name`` and ``args``, the builder's bound arguments (defaults included, as JSON), so
    ``BUILDERS[name](**ex.args)`` rebuilds it (the browser test does). An argument that is not
    JSON-able (a trained model) is left out: the builder's default must rebuild the same explorer.
    """

    def wrap(fn: Callable[..., Explorer]) -> Callable[..., Explorer]:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def build(*a, **kw) -> Explorer:
            bound = sig.bind(*a, **kw)
            bound.apply_defaults()
            ex = fn(*a, **kw)
            args = {}
            for k, v in bound.arguments.items():
                try:
                    args[k] = _jsonable(v)
                except TypeError:
                    continue
            ex._named(name, args)
            return ex

        return build

    return wrap
