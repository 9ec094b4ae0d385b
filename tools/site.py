"""The course as a static web site: ``make site`` (``python -m tools.site build --out site``).

Writes ``site/index.html`` (the table of contents) and one ``site/NN_name.html`` per notebook: its
prose (markdown, math converted to MathML at build time), code (highlighted), stored outputs, and
every explorer *live*: the page runs the same ``explorer.js`` as JupyterLab, with a static model
(``tools/site_assets/site.js``) that plays frames computed here for the explorer's state space.
No kernel, no server, no network: a page works opened from disk (``file://``); everything it needs
is inside it.

The state space of an explorer and its blob: :mod:`tools.site_state` (five named steps, the
blob's layout and its reader :func:`decode_blob`), with :mod:`tools.site_affine` for sliders
declared ``affine=``. Every live control of an explorer is live on its page; the others are shown
disabled at their notebook value, with a note.

Which explorer an output shows: the output's metadata ``{"attnlib": {"builder", "args",
"dropped"}}`` (written by ``Explorer._repr_mimebundle_``), keyed by (cell, output) index; a widget
output without it (a ``tqdm`` bar) is shown as its stored text. An explorer built with an
argument its builder cannot rebuild (``dropped``) fails the build, naming it.

Both languages: the English pages in ``site/``, the Chinese ones in ``site/zh/`` (``<html
lang="zh-CN">``), built from ``notebooks/zh/`` (the generated Chinese notebooks, tools/i18n.py).
Every page links to the same page in the other language. An explorer's frames are computed once and
put in both pages (the code cells, and so the explorers, are the same); only its words differ: its
alt text, and its spec's words (labels, menus, titles, readout names, texts: :mod:`tools.site_words`
takes them from the explorer built in the page's language). What ``site.js`` itself says comes
from the same tables as the page text (:data:`LANGUAGES`), as JSON in the page.

Run ``python -m tools.site build --out site [NOTEBOOK ...]`` (``make site``; a notebook by path or
stem builds only its pages, the indexes still list every notebook).
"""

from __future__ import annotations

import argparse
import base64
import functools
import gzip
import html
import json
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file (python tools/site.py): the root holds tools/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.nbtext import cell_alts as _alts  # noqa: E402  (one reader, shared with i18n)
from tools.nbtext import course_notebooks  # noqa: E402
from tools.site_state import (  # noqa: E402
    EXPLORER_BUDGET,
    MAX_FRAMES,
    decode_blob,
    explorer_state_space,
    readout_columns,
)
from tools.site_words import translated_spec  # noqa: E402

__all__ = ["build", "decode_blob", "explorer_state_space", "readout_columns", "main"]

ROOT = Path(__file__).resolve().parents[1]
ASSETS = Path(__file__).with_name("site_assets")
NOTEBOOKS = ROOT / "notebooks"
EXPLORER_JS = ROOT / "attnlib" / "widgets" / "framework" / "explorer.js"
#: Budgets of the issue: a page, the whole site.
PAGE_BUDGET = 8_000_000
SITE_BUDGET = 60_000_000
COURSE = "attnlib — learn attention by moving it"


#: What a page says around the notebook, per language: the folder of its notebooks and of its pages
#: (under the site), and the words. ``other``: the link to the same page in the other language;
#: ``attnlib``: the language attnlib speaks for its explorers; ``checkbox``: a checkbox's states;
#: ``site_words``: what ``site.js`` says (``<script id="site-words">``, and the screen-reader
#: sentences ``sr`` it passes to ``explorer.js``).
LANGUAGES: dict[str, dict[str, Any]] = {
    "en": {
        "html": "en",
        "notebooks": NOTEBOOKS,
        "folder": "",
        "course": COURSE,
        "contents": "Contents",
        "sections": "Sections",
        "learn": "What you will learn",
        "time": "Time:",
        "other": ("zh", "中文", "zh-CN"),
        "run_live": "Run this notebook live: <code>make lab</code>, then open <code>{path}</code>.",
        "intro": (
            "<p>Interactive notebooks that teach the attention mechanism and the Transformer. "
            "Every explorer on these pages is live: its frames were computed with attnlib when "
            "the site was built, and your browser plays them; nothing is fetched and no kernel "
            "runs.</p><p>To run the notebooks live (and change every number): clone the "
            "repository, then <code>make lab</code> (installs a pinned environment and opens "
            "JupyterLab on <code>notebooks/</code>).</p>"
        ),
        "explorer_alt": "The {name} explorer at its initial settings.",
        "attnlib": "en",
        "checkbox": ("off", "on"),
        "site_words": {
            "fixed": "fixed on this page: change it live in JupyterLab (make lab)",
            "greyed": "Greyed controls are fixed on this page (their frames would not fit it); "
            "run the notebook with make lab to move them.",
            "failed": "This explorer could not start: ",
            "sr": {
                "name": "{name} explorer: {panels}",
                "described": "The numbers are in the table beside the picture.",
            },
        },
    },
    "zh": {
        "html": "zh-CN",
        "notebooks": NOTEBOOKS / "zh",
        "folder": "zh",
        "course": "attnlib：拖动滑块，学懂注意力",
        "contents": "目录",
        "sections": "各节",
        "learn": "你将学到",
        "time": "用时：",
        "other": ("en", "English", "en"),
        "run_live": "在本机运行这个笔记本：<code>make lab</code>，然后打开 <code>{path}</code>。",
        "intro": (
            "<p>讲解注意力机制和 Transformer 的交互式笔记本。"
            "这些页面上的每个交互演示都可以直接操作：它的帧在生成网站时由 attnlib 算好，"
            "由你的浏览器播放；不会从网络获取任何东西，也不运行内核。</p>"
            "<p>想在本机运行笔记本（并改动每一个数）：克隆仓库，"
            "然后运行 <code>make lab</code>（安装固定版本的环境，"
            "并在 <code>notebooks/</code> 上打开 JupyterLab；"
            "中文版在 <code>zh/</code> 文件夹里）。</p>"
        ),
        "explorer_alt": "{name} 交互演示的初始状态。",
        "attnlib": "zh_CN",
        "checkbox": ("关", "开"),
        "site_words": {
            "fixed": "在本页固定：在 JupyterLab 里可以改动它（make lab）",
            "greyed": "灰色的控件在本页固定（它们的帧放不进本页）；"
            "用 make lab 运行笔记本就能改动它们。",
            "failed": "这个交互演示未能启动：",
            "sr": {"name": "{name} 交互演示：{panels}", "described": "图中的数值见旁边的表格。"},
        },
    },
}


def _lang(lang: str) -> dict[str, Any]:
    return LANGUAGES[lang]


def _other_href(lang: str, page: str) -> str:
    """The same page (``NN_name.html``, ``index.html``) in the other language, from this one."""
    other = LANGUAGES[_lang(lang)["other"][0]]
    up = "../" if _lang(lang)["folder"] else ""
    return up + (f"{other['folder']}/" if other["folder"] else "") + page


def _other_link(lang: str, page: str) -> str:
    code, name, hreflang = _lang(lang)["other"]
    return (
        f'<a class="site-lang" href="{_other_href(lang, page)}" hreflang="{hreflang}" '
        f'lang="{hreflang}">{name}</a>'
    )


WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


# ---------------------------------------------------------------- explorers
def explorer_html(
    name: str, args: dict, uid: str, png_b64: str | None, alt: str, lang: str = "en"
) -> tuple[str, dict]:
    """The explorer's block for a page of ``lang``, and a report (frames, bytes, live controls)."""
    (specs, packed), report = explorer_frames(name, args, (lang,))
    return explorer_block(name, uid, (specs[lang], packed), png_b64, alt), report


def explorer_block(name: str, uid: str, frames: tuple[str, str], png_b64: str | None, alt: str):
    """An explorer's ``<figure>`` from its frames (``(spec_json, packed)``, one computation for
    both languages' pages) and this page's alt text."""
    spec_json, packed = frames
    fallback = (
        f'<img class="site-fallback" src="data:image/png;base64,{png_b64}" '
        f'alt="{html.escape(alt)}">'
        if png_b64
        else ""
    )
    return (
        f'<figure class="site-explorer" id="{uid}" data-builder="{html.escape(name)}" '
        f'aria-label="{html.escape(alt)}">'
        f'<script type="application/json" class="attnlib-spec">{spec_json}</script>'
        f'<script type="application/octet-stream" class="attnlib-frames">{packed}</script>'
        f"{fallback}</figure>"
    )


def _spec_json(spec: dict) -> str:
    return json.dumps(spec, separators=(",", ":")).replace("</", "<\\/")


def explorer_frames(
    name: str, args: dict, langs: tuple[str, ...] = ("en",)
) -> tuple[tuple[dict[str, str], str], dict]:
    """An explorer's state space as the pages of ``langs`` store it: ``({lang: spec_json},
    packed)``, one blob for every language, and a report. The frames are computed once, in
    English, recorded (:func:`attnlib.util.i18n.recording`); each other language's spec takes its
    words from the same explorer built in that language (:mod:`tools.site_words`)."""
    from attnlib.util.i18n import language, recording

    t0 = time.perf_counter()
    max_frames = MAX_FRAMES
    with language("en"), recording() as rec:
        while True:
            spec, blob = explorer_state_space(name, args, max_frames)
            packed = base64.b64encode(gzip.compress(blob, 6, mtime=0)).decode("ascii")
            if len(packed) <= EXPLORER_BUDGET or spec["frames"] <= 1:
                break
            max_frames = spec["frames"] - 1  # over its share: one control fewer live
    specs = {}
    for lang in langs:
        said = spec
        if _lang(lang)["attnlib"] != "en":
            try:
                said = translated_spec(spec, rec, _lang(lang)["attnlib"], _lang(lang)["checkbox"])
            except ValueError as e:
                raise SiteError(f"the {name} explorer ({args!r:.80}): {e}") from None
        specs[lang] = _spec_json(said)
    spec_json = specs[langs[0]] if langs else _spec_json(spec)
    report = {
        "builder": name,
        "frames": spec["frames"],
        "basis": spec["basis"],
        "affine_worst_ulps": spec["affine_worst_ulps"],
        "raw_bytes": len(blob),
        "bytes": len(packed) + len(spec_json),
        "live": spec["live"],
        "not_live": spec["not_live"],
        "seconds": time.perf_counter() - t0,
    }
    return (specs, packed), report


# ---------------------------------------------------------------- markdown, math, code
#: Formulas that may be shown as TeX code (latex2mathml cannot convert them); any other formula
#: that falls back fails the build (:func:`tex_problems`).
TEX_FALLBACK_ALLOWED: frozenset[str] = frozenset()
#: Every formula shown as TeX code so far, in order (the build reads it page by page).
TEX_FALLBACKS: list[str] = []


def _mathml(tex: str, display: bool) -> str:
    import latex2mathml.converter

    try:
        return latex2mathml.converter.convert(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - an unsupported command: show the TeX as code, no $
        TEX_FALLBACKS.append(tex)  # counted: a silent fallback would ship unreadable math
        return f'<code class="tex">{html.escape(tex)}</code>'


def _markdown():
    from tools.mdparse import parser

    return parser(lambda content, opts: _mathml(content, opts.get("display_mode", False)))


_MD = None
_TAG = re.compile(r"<[^<>]*>")


def _parser():
    global _MD
    if _MD is None:
        _MD = _markdown()
    return _MD


def english_html(folder: Path | None = None) -> frozenset[str]:
    """The raw HTML the English notebooks of ``folder`` (default ``notebooks/``) hold, exactly as
    written: each HTML block, and each tag (inline, or inside a block)."""
    return _english_html((folder or NOTEBOOKS).resolve())


@functools.lru_cache(maxsize=4)
def _english_html(folder: Path) -> frozenset[str]:
    found: set[str] = set()
    for path in course_notebooks(folder):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            for tok in _parser().parse(_text(cell["source"])):
                if tok.type == "html_block":
                    found.add(tok.content)
                    found.update(_TAG.findall(tok.content))
                found.update(c.content for c in tok.children or [] if c.type == "html_inline")
    return frozenset(found)


def _foreign_html_escaped(tokens, allowed: frozenset[str]):
    """``tokens`` with each raw HTML token not made of ``allowed`` HTML shown as text: a
    translation may only repeat the English's HTML, never add a tag or an attribute (I18N-3)."""
    for tok in tokens:
        if tok.type == "html_block" and tok.content not in allowed:
            rest = tok.content
            for tag in sorted(allowed, key=len, reverse=True):
                rest = rest.replace(tag, "")
            if "<" in rest:  # a tag the English lacks, or a broken one the browser would finish
                tok.content = html.escape(tok.content)
        for child in tok.children or []:
            if child.type == "html_inline" and child.content not in allowed:
                child.type = "text"  # rendered escaped
    return tokens


def markdown_html(text: str, allowed: frozenset[str] | None = None) -> str:
    """Markdown as HTML, its math as MathML. Raw HTML passes only as the English notebooks have it
    (``allowed``: :func:`english_html`); any other is shown as text. English prose is trusted; a
    translation comes from a catalog anyone may contribute to."""
    md, env = _parser(), {}
    tokens = _foreign_html_escaped(
        md.parse(text, env), english_html() if allowed is None else allowed
    )
    return md.renderer.render(tokens, md.options, env)


def inline_html(text: str, allowed: frozenset[str] | None = None) -> str:
    """One line of markdown (a title) as inline HTML, its math as MathML (raw HTML as in
    :func:`markdown_html`)."""
    md, env = _parser(), {}
    tokens = md.parseInline(text, env)
    _foreign_html_escaped(tokens, english_html() if allowed is None else allowed)
    return md.renderer.render(tokens, md.options, env)


def plain_title(text: str) -> str:
    """A title for ``<title>``: its TeX as plain text (``$\\sqrt{d_k}$`` -> ``√d_k``)."""
    text = re.sub(r"\\sqrt\{([^}]*)\}", "√\\1", text)
    text = re.sub(r"\\([A-Za-z]+)", "\\1", text)
    return text.replace("$", "").replace("{", "").replace("}", "")


def code_html(source: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(source, PythonLexer(), HtmlFormatter(cssclass="highlight"))


def pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="highlight").get_style_defs(".highlight")


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _text(v) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


_HEADING = re.compile(r"<h([23])>(.*?)</h\1>", re.S)


def _slug(inner_html: str, used: set[str]) -> str:
    """A heading's anchor: its words, lower case, joined by "-" (unique in the page)."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", inner_html)).lower()
    base = re.sub(r"[^0-9a-z]+", "-", text).strip("-")[:60].strip("-") or "section"
    slug, k = base, 2
    while slug in used:
        slug, k = f"{base}-{k}", k + 1
    used.add(slug)
    return slug


def anchored(
    md_html: str, used: set[str], sections: list[dict], ids: list[str] | None = None
) -> str:
    """``md_html`` with an ``id`` on every ``<h2>``/``<h3>``; each is appended to ``sections``
    as ``{"level", "html", "id"}`` (the page's contents list and the index read them). ``ids``:
    the anchors to give, in order (a Chinese page takes its English page's, so a section has
    one address in both languages); past its end, anchors are made from the words."""

    def add(m: re.Match) -> str:
        level, inner = int(m.group(1)), m.group(2)
        k = len(sections)
        sid = ids[k] if ids is not None and k < len(ids) else _slug(inner, used)
        used.add(sid)
        sections.append({"level": level, "html": inner, "id": sid})
        return f'<h{level} id="{sid}">{inner}</h{level}>'

    return _HEADING.sub(add, md_html)


def notebook_sections(path: Path, ids: list[str] | None = None) -> list[dict]:
    """The notebook's sections (its markdown ``##`` and ``###`` headings) with their anchors, as
    its page gives them (``ids``: see :func:`anchored`)."""
    nb = json.loads(path.read_text())
    used: set[str] = set()
    sections: list[dict] = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            anchored(markdown_html(_text(cell["source"])), used, sections, ids)
    return sections


def contents_html(sections: list[dict], href: str = "") -> str:
    """A contents list, one link a section (``href``: the page, for links from elsewhere), each
    ``###`` nested under the ``##`` before it."""
    out, sub = [], []

    def close() -> None:
        if sub:
            out[-1] = out[-1].replace("</li>", f"<ol>{''.join(sub)}</ol></li>")
            sub.clear()

    for s in sections:
        li = f'<li><a href="{href}#{s["id"]}">{s["html"]}</a></li>'
        if s["level"] == 3 and out:
            sub.append(li)
        else:
            close()
            out.append(li)
    close()
    return f"<ol>{''.join(out)}</ol>" if out else ""


# ---------------------------------------------------------------- pages
def notebook_info(path: Path, lang: str = "en", ids: list[str] | None = None) -> dict:
    """Title and what it teaches (the first markdown cell), for the index and headers. A Chinese
    notebook's labels may still be the English ones (a catalog not yet translated)."""
    nb = json.loads(path.read_text())
    first = next(_text(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    title = first.splitlines()[0].lstrip("# ").strip()
    learn_label = "|".join(re.escape(LANGUAGES[x]["learn"]) for x in dict.fromkeys([lang, "en"]))
    time_label = "|".join(re.escape(LANGUAGES[x]["time"]) for x in dict.fromkeys([lang, "en"]))
    m = re.search(rf"\*\*(?:{learn_label})\*\*\s*\n(.*?)(\n\s*\n\*\*|\Z)", first, re.S)
    learn = m.group(1).strip() if m else ""
    t = re.search(rf"\*\*(?:{time_label})\*\*\s*(.*)", first)
    return {
        "stem": path.stem,
        "sections": notebook_sections(path, ids),
        "title": title,
        "learn": learn,
        "time": t.group(1).strip() if t else "",
    }


class SiteError(ValueError):
    """A notebook the site cannot show as it is (an explorer it cannot rebuild)."""


def explorer_outputs(path: Path, lang: str = "en") -> dict[tuple[int, int], dict]:
    """Every explorer output of the notebook, keyed by ``(cell, output)`` index: ``{"builder",
    "args", "png", "alt"}``. An explorer output is a widget output whose metadata names its builder
    (``{"attnlib": {"builder", "args", "dropped"}}``, written by ``Explorer._repr_mimebundle_``);
    any other widget (a ``tqdm`` bar) is shown as its stored text, and shifts nothing.

    Raises :class:`SiteError` naming the notebook, the cell and the arguments when an explorer was
    built with an argument its builder cannot rebuild (``dropped``: see ``@builder``'s
    ``rebuild=``): the page would show the default in its place."""
    nb = json.loads(path.read_text())
    found = {}
    for ci, cell in enumerate(nb["cells"]):
        for oi, o in enumerate(cell.get("outputs", [])):
            meta = o.get("metadata", {}).get("attnlib")
            if WIDGET_MIME not in o.get("data", {}) or not isinstance(meta, dict):
                continue
            name = meta.get("builder")
            if not name:
                continue
            if meta.get("dropped"):
                raise SiteError(
                    f"{path.name} cell {ci}: the {name} explorer was built with "
                    f"{', '.join(meta['dropped'])}, which the site cannot rebuild (not JSON); pass "
                    f"JSON-able arguments, or declare how to rebuild it (@builder(..., rebuild=))"
                )
            png = o["data"].get("image/png")
            found[(ci, oi)] = {
                "builder": name,
                "args": dict(meta.get("args") or {}),
                "png": _text(png).replace("\n", "") if png else None,
                "alt": _explorer_alt(cell, name, lang),
            }
    return found


def _job(job: tuple[str, dict, tuple[str, ...]]) -> tuple[tuple[dict[str, str], str], dict]:
    """One explorer's frames and its spec per language (the recording that re-says its texts
    lives in this worker process)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    name, args, langs = job
    return explorer_frames(name, args, langs)


def _outputs_html(cell, ci: int, page: dict, explorers: dict) -> str:
    alts = _alts(cell)
    parts = []
    for oi, o in enumerate(cell.get("outputs", [])):
        kind = o["output_type"]
        if kind == "stream":
            cls = "stderr" if o.get("name") == "stderr" else "stdout"
            parts.append(f'<pre class="out {cls}">{html.escape(_text(o["text"]))}</pre>')
        elif kind == "error":
            tb = _ANSI.sub("", "\n".join(o.get("traceback", [])))
            parts.append(f'<pre class="out error">{html.escape(tb)}</pre>')
        else:
            data = o.get("data", {})
            if (ci, oi) in explorers:
                parts.append(explorers[(ci, oi)])
            elif "image/png" in data:
                i = page["images_in_cell"]
                page["images_in_cell"] += 1
                alt = alts[min(i, len(alts) - 1)] if alts else ""
                page["missing_alt"] += not alt
                png = _text(data["image/png"]).replace("\n", "")
                parts.append(
                    f'<img class="out" src="data:image/png;base64,{png}" alt="{html.escape(alt)}">'
                )
            elif "text/html" in data:
                parts.append(f'<div class="out html">{_text(data["text/html"])}</div>')
            elif "text/markdown" in data:
                parts.append(
                    f'<div class="out md">{markdown_html(_text(data["text/markdown"]))}</div>'
                )
            elif "text/plain" in data:
                parts.append(f'<pre class="out">{html.escape(_text(data["text/plain"]))}</pre>')
    return "".join(parts)


def _explorer_alt(cell, builder: str, lang: str = "en") -> str:
    alts = _alts(cell)
    if alts:
        return alts[0]
    return _lang(lang)["explorer_alt"].format(name=builder.replace("_", " "))


def page_html(
    path: Path,
    info: dict,
    prev: dict | None,
    nxt: dict | None,
    explorers: dict,
    lang: str = "en",
    ids: list[str] | None = None,
) -> str:
    """A notebook's page; ``explorers``: ``{(cell, output): block}`` (:func:`explorer_html`);
    ``lang``: a key of :data:`LANGUAGES`; ``ids``: the sections' anchors (:func:`anchored`)."""
    words = _lang(lang)
    nb = json.loads(path.read_text())
    page = {"images_in_cell": 0, "missing_alt": 0}
    cells = []
    used: set[str] = set()
    sections: list[dict] = []
    for ci, cell in enumerate(nb["cells"]):
        page["images_in_cell"] = 0
        src = _text(cell["source"])
        if cell["cell_type"] == "markdown":
            body = anchored(markdown_html(src), used, sections, ids)
            cells.append(f'<section class="cell md">{body}</section>')
            if not any(c == "<!--contents-->" for c in cells):  # after the title cell
                cells.append("<!--contents-->")
        elif cell["cell_type"] == "code":
            if not src.strip() and not cell.get("outputs"):
                continue
            cells.append(
                f'<section class="cell code">{code_html(src)}'
                f"{_outputs_html(cell, ci, page, explorers)}</section>"
            )
    toc = contents_html(sections)
    if toc:
        c = html.escape(words["contents"])
        toc = f'<nav class="site-toc" aria-label="{c}"><p>{c}</p>{toc}</nav>'

    cells = [toc if c == "<!--contents-->" else c for c in cells]
    nav = _nav(prev, nxt)
    live = path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path("notebooks", path.name)
    body = (
        f'<header class="site-header"><a href="index.html">{html.escape(words["course"])}</a>'
        f"{_other_link(lang, path.stem + '.html')}{nav}</header>"
        f'<main>{"".join(cells)}</main><footer class="site-footer">{nav}'
        f"<p>{words['run_live'].format(path=html.escape(live.as_posix()))}</p></footer>"
    )
    return _document(plain_title(info["title"]), body, script=bool(explorers), lang=lang)


def _nav(prev: dict | None, nxt: dict | None) -> str:
    a = (
        f'<a rel="prev" href="{prev["stem"]}.html">← {inline_html(prev["title"])}</a>'
        if prev
        else "<span></span>"
    )
    b = (
        f'<a rel="next" href="{nxt["stem"]}.html">{inline_html(nxt["title"])} →</a>'
        if nxt
        else "<span></span>"
    )
    return f'<nav class="site-nav">{a}{b}</nav>'


_SCROLLERS = re.compile(
    r'(<pre|<div class="out html"|<math(?=[^>]*display="block"))(?=[ >])(?![^>]*tabindex)'
)


def _document(title: str, body: str, *, script: bool, lang: str = "en") -> str:
    # Code and output blocks scroll sideways: tabindex lets the keyboard reach and scroll them
    # (WCAG 2.1.1; axe's scrollable-region-focusable).
    body = _SCROLLERS.sub(r'\1 tabindex="0"', body)
    css = (ASSETS / "site.css").read_text() + pygments_css()
    js = ""
    if script:
        from attnlib.widgets.framework.view import CSS  # the explorer's own styles (its _css)

        css += CSS
        src = EXPLORER_JS.read_text().replace("</script", "<\\/script")
        words = json.dumps(_lang(lang)["site_words"], ensure_ascii=False).replace("</", "<\\/")
        js = (
            f'<script type="application/json" id="site-words">{words}</script>'
            f'<script type="text/plain" id="attnlib-explorer-js">{src}</script>'
            f'<script type="module">{(ASSETS / "site.js").read_text()}</script>'
        )
    return (
        f'<!DOCTYPE html><html lang="{_lang(lang)["html"]}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{css}</style></head>"
        f"<body>{body}{js}</body></html>"
    )


def index_html(infos: list[dict], lang: str = "en") -> str:
    words = _lang(lang)
    rows = "".join(
        f'<li><h2><a href="{i["stem"]}.html">{inline_html(i["title"])}</a></h2>'
        f"{markdown_html(i['learn'])}"
        + (f'<p class="time">{html.escape(i["time"])}</p>' if i["time"] else "")
        + (
            f'<details class="sections"><summary>{html.escape(words["sections"])}</summary>'
            f"{contents_html(i['sections'], href=i['stem'] + '.html')}</details>"
            if i.get("sections")
            else ""
        )
        + "</li>"
        for i in infos
    )
    course = html.escape(words["course"])
    body = (
        f'<header class="site-header"><span>{course}</span>{_other_link(lang, "index.html")}'
        f"</header><main><h1>{course}</h1>{words['intro']}"
        f'<ol class="toc">{rows}</ol></main>'
    )
    return _document(words["course"], body, script=False, lang=lang)


def build(
    out: Path,
    notebooks: list[Path] | None = None,
    jobs: int = 2,
    langs: tuple[str, ...] = ("en", "zh"),
) -> dict:
    """Write the site into ``out`` (the Chinese pages into ``out/zh``); return a report (per page
    and explorer: bytes, seconds). Each explorer's frames are computed once, for every language."""
    t0 = time.perf_counter()
    every = course_notebooks(NOTEBOOKS)
    paths = notebooks or every
    _check_sources(out, paths, langs)  # before any frame is computed (minutes of work)
    explorers = {p.stem: explorer_outputs(p) for p in paths}
    work = [
        (p.stem, key, (x["builder"], x["args"], langs))
        for p in paths
        for key, x in explorers[p.stem].items()
    ]
    frames: dict[tuple[str, tuple[int, int]], tuple[tuple[dict[str, str], str], dict]] = {}
    if jobs > 1 and len(work) > 1:
        order = sorted(work, key=lambda w: -_cost_guess(w[2][0]))
        with ProcessPoolExecutor(jobs) as pool:
            for (stem, key, _), res in zip(order, pool.map(_job, [w[2] for w in order])):
                frames[(stem, key)] = res
    else:
        for stem, key, job in work:
            frames[(stem, key)] = _job(job)
    report: dict[str, Any] = {"pages": {}, "explorers": []}
    for (stem, _), (_, rep) in sorted(frames.items()):
        report["explorers"].append({**rep, "page": stem})
    ids = {p.stem: [s["id"] for s in notebook_sections(p)] for p in every}
    for lang in langs:
        _write_language(out, lang, paths, every, explorers, frames, ids, report)
    report["total"] = sum(report["pages"].values())
    report["seconds"] = time.perf_counter() - t0
    return report


def _check_sources(out: Path, paths: list[Path], langs: tuple[str, ...]) -> None:
    """Refuse (SiteError) an ``out`` that is or lies under a file, a notebook that is not
    ``notebooks/NN_name.ipynb`` (its pages would be built from another file of the same name),
    and a missing translation of one."""
    for q in (Path(out), *Path(out).parents):
        if q.exists():
            if not q.is_dir():
                raise SiteError(f"--out {out}: {q} is a file, not a folder")
            break
    for p in paths:
        path = Path(p).resolve()
        if path.parent != NOTEBOOKS.resolve() or not re.fullmatch(r"\d\d_.+\.ipynb", path.name):
            raise SiteError(f"{p}: not a notebook of notebooks/ (NN_name.ipynb)")
        for lang in langs:
            _language_path(path, lang)


def _language_path(path: Path, lang: str) -> Path:
    """The notebook of ``lang`` for the English ``path`` (notebooks/zh/NN_name.ipynb)."""
    p = _lang(lang)["notebooks"] / path.name
    if not p.exists():
        raise SiteError(f"no {p.relative_to(ROOT)}: run `make translations`")
    return p


def _write_language(out, lang, paths, every, explorers, frames, ids, report) -> None:
    """One language's pages and index, the explorers' frames given (``frames``)."""
    folder = out / _lang(lang)["folder"] if _lang(lang)["folder"] else out
    folder.mkdir(parents=True, exist_ok=True)
    prefix = f"{_lang(lang)['folder']}/" if _lang(lang)["folder"] else ""
    infos = [notebook_info(_language_path(p, lang), lang, ids[p.stem]) for p in every]
    stems = [p.stem for p in every]
    for p in paths:
        src = _language_path(p, lang)
        mine = explorer_outputs(src, lang)
        if {k: (x["builder"], x["args"]) for k, x in mine.items()} != {
            k: (x["builder"], x["args"]) for k, x in explorers[p.stem].items()
        }:
            raise SiteError(
                f"{src.relative_to(ROOT)}: its explorers are not the English ones "
                "(run `make translations`)"
            )
        blocks = {}
        for key, x in mine.items():
            specs, packed = frames[(p.stem, key)][0]
            uid = f"{p.stem}-c{key[0]}-o{key[1]}"
            block = explorer_block(x["builder"], uid, (specs[lang], packed), x["png"], x["alt"])
            blocks[key] = block
        i = stems.index(p.stem)
        prev = infos[i - 1] if i > 0 else None
        nxt = infos[i + 1] if i + 1 < len(infos) else None
        seen = len(TEX_FALLBACKS)
        text = page_html(src, infos[i], prev, nxt, blocks, lang, ids[p.stem])
        _tex_fallbacks(report, prefix + p.stem, seen)
        (folder / f"{p.stem}.html").write_text(text)
        report["pages"][prefix + p.stem] = len(text.encode())
    seen = len(TEX_FALLBACKS)
    index = index_html(infos, lang)
    _tex_fallbacks(report, prefix + "index", seen)
    (folder / "index.html").write_text(index)
    report["pages"][prefix + "index"] = len(index.encode())


def _tex_fallbacks(report: dict, page: str, seen: int) -> None:
    """Note in ``report["tex_fallbacks"]`` (formula -> pages) the formulas ``page`` showed as TeX
    code: those of :data:`TEX_FALLBACKS` after its first ``seen``."""
    where = report.setdefault("tex_fallbacks", {})
    for tex in TEX_FALLBACKS[seen:]:
        pages = where.setdefault(tex, [])
        if page not in pages:
            pages.append(page)


def tex_problems(report: dict) -> list[str]:
    """The formulas of the build shown as TeX code and not in :data:`TEX_FALLBACK_ALLOWED`."""
    return [
        f"{', '.join(pages)}: cannot convert ${tex}$ to MathML (shown as TeX code)"
        for tex, pages in report.get("tex_fallbacks", {}).items()
        if tex not in TEX_FALLBACK_ALLOWED
    ]


def _cost_guess(name: str) -> int:
    return {"masking": 9, "query": 8, "positions": 7, "kernel_regression": 6}.get(name, 1)


def _table(report: dict) -> str:
    lines = [
        "| page | explorer | live controls | fixed | frames | MB | build s |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in report["explorers"]:
        lines.append(
            f"| {e['page']} | {e['builder']} | {', '.join(e['live'])} | "
            f"{', '.join(e['not_live']) or '—'} | {_frames(e)} | {e['bytes'] / 1e6:.2f} | "
            f"{e['seconds']:.1f} |"
        )
    big = max((v, k) for k, v in report["pages"].items())
    lines.append(
        f"site: {len(report['pages'])} pages, {report['total'] / 1e6:.1f} MB "
        f"(largest {big[1]} {big[0] / 1e6:.1f} MB) in {report['seconds']:.0f} s"
    )
    fallbacks = report.get("tex_fallbacks", {})
    lines.append(
        f"TeX shown as code: {len(fallbacks)} formula(s), "
        f"{len(tex_problems(report))} not allowed (TEX_FALLBACK_ALLOWED)"
    )
    return "\n".join(lines)


def _frames(e: dict) -> str:
    basis = e.get("basis", 1)
    return f"{e['frames']} × {basis} (affine basis)" if basis > 1 else str(e["frames"])


def _notebook_path(x: str) -> Path:
    """A notebook given by its path or its stem (``03_softmax_gradient``)."""
    p = Path(x)
    if not p.exists():
        p = NOTEBOOKS / f"{p.stem}.ipynb"
    if not p.exists():
        raise SystemExit(f"site: no notebook {x!r} (a path, or a stem of notebooks/)")
    return p.resolve()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write the site")
    b.add_argument("--out", type=Path, default=ROOT / "site")
    b.add_argument("--jobs", type=int, default=2)
    b.add_argument(
        "notebooks", nargs="*", help="notebooks to build (paths or stems: 03_softmax_gradient)"
    )
    a = ap.parse_args(argv)
    paths = [_notebook_path(x) for x in a.notebooks]
    try:
        report = build(a.out, paths or None, a.jobs)
    except SiteError as e:
        print(f"site: {e}", file=sys.stderr)
        return 2
    print(_table(report))
    (a.out / "report.json").write_text(json.dumps(report, indent=1))
    for problem in tex_problems(report):
        print(f"site: {problem}", file=sys.stderr)
    over = [k for k, v in report["pages"].items() if v > PAGE_BUDGET]
    if over or report["total"] > SITE_BUDGET:
        print(f"over budget: pages {over}, total {report['total'] / 1e6:.1f} MB", file=sys.stderr)
        return 1
    return 1 if tex_problems(report) else 0


if __name__ == "__main__":
    sys.exit(main())
