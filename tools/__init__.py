"""The project's tools (not installed with attnlib): the site builder (:mod:`tools.site`, with
:mod:`tools.site_affine`), the notebook runner (:mod:`tools.notebooks`), the claim index
(:mod:`tools.claims`), the notebook text reader (:mod:`tools.nbtext`) and the Chinese edition's
catalogs and notebooks (:mod:`tools.i18n`).

Run one from the repository root as a module (``python -m tools.site build``) or as a file
(``python tools/notebooks.py run ...``); tests import them as ``tools.x`` (pytest's ``pythonpath``
holds the repository root).
"""
