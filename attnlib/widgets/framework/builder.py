"""The builder decorator: an explorer records the arguments it was built with, by itself.

``@builder("name")`` on a function returning an
:class:`~attnlib.widgets.framework.explorer.Explorer` binds the call's arguments to the function's
signature (defaults included), keeps the JSON-able ones as ``ex.args`` and sets ``ex.name``, so
``BUILDERS[name](**ex.args)`` rebuilds the same explorer (the browser test and the static site do)
and no builder restates its own signature.

An argument given that is not JSON-able (a model) cannot be rebuilt from ``ex.args``: it is named
in ``ex.dropped`` (and in the notebook output's metadata), and the static site refuses to build
such an explorer, naming it, rather than show the default in its place. A builder that knows how
to rebuild such an argument declares it: ``@builder("head_view", rebuild={"encoder": f})``, where
``f(value)`` returns the JSON value that rebuilds it (e.g. ``None`` for "the default, which is
this same model") or raises :class:`TypeError` when it cannot (then it is dropped).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from attnlib.widgets.framework.readout import to_py


class _Nameable(Protocol):
    def _named(self, name: str, args: dict[str, Any], dropped: list[str]) -> None: ...


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


def builder(name: str, rebuild: Mapping[str, Callable[[Any], Any]] | None = None):
    """Decorator of an explorer builder registered as ``BUILDERS[name]``: the explorer it returns
    gets ``name`` and ``args``, the builder's bound arguments (defaults included, as JSON), so
    ``BUILDERS[name](**ex.args)`` rebuilds it (the browser test does). An argument given that is
    not JSON-able (a trained model) is left out of ``args`` and named in ``ex.dropped``, unless
    ``rebuild[arg](value)`` gives the JSON value that rebuilds it (module doc). A non-JSON default
    is left out in silence: the default rebuilds it.
    """
    rebuild = dict(rebuild or {})

    def wrap(fn: Callable[..., Explorer]) -> Callable[..., Explorer]:
        sig = inspect.signature(fn)
        unknown = sorted(set(rebuild) - set(sig.parameters))
        if unknown:
            raise TypeError(f"builder {name!r}: rebuild names {unknown}, not parameters of {fn}")

        @functools.wraps(fn)
        def build(*a, **kw) -> Explorer:
            bound = sig.bind(*a, **kw)
            given = set(bound.arguments)
            bound.apply_defaults()
            ex = fn(*a, **kw)
            args, dropped = {}, []
            for k, v in bound.arguments.items():
                try:
                    args[k] = _jsonable(v)
                    continue
                except TypeError:
                    pass
                try:
                    if k in rebuild:
                        args[k] = _jsonable(rebuild[k](v))
                        continue
                except TypeError:
                    pass
                if k in given:
                    dropped.append(k)
            ex._named(name, args, dropped)
            return ex

        return build

    return wrap
