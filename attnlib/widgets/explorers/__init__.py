"""The course's explorers, one builder per concept (``BUILDERS`` in :mod:`attnlib.widgets`)."""
