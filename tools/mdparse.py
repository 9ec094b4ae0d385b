"""The one Markdown parser of the site and the catalogs: the catalogs' block boundaries are
right only while tools/i18n.py splits the prose exactly as tools/site.py renders it."""

from __future__ import annotations

from collections.abc import Callable


def parser(renderer: Callable[[str, dict], str] | None = None):
    """markdown-it with commonmark, raw HTML, tables, strikethrough and ``$``/``$$`` math;
    ``renderer(tex, options)`` turns a formula into HTML (the site's MathML), if given."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    kw = {} if renderer is None else {"renderer": renderer}
    dollarmath_plugin(md, allow_space=True, allow_digits=True, double_inline=True, **kw)
    return md
