"""Notebook 08's tiny encoder-decoder: ``config`` (the settings), ``model``, ``toy_tasks`` (the
generated data) and ``training``."""
