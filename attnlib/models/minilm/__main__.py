"""``python -m attnlib.models.minilm --requirement``: the pinned model package."""

from attnlib.models.minilm.files import _main

raise SystemExit(_main())
