"""The course's experiments and demo inputs, built on the core and the models: the scaling
statistics, masking pitfalls, costs and memory, greedy-decoding traces, what pretrained heads do,
and ``examples`` (the fixed inputs every notebook, figure and explorer starts from)."""
