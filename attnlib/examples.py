"""The course's demo inputs, shared by explorers, figures and notebooks (no maths here)."""

__all__ = ["DEFAULT_KEYS", "DEFAULT_VALUES"]

#: The teaching example: k1, k2 as in C26, plus a third key pointing the other way.
DEFAULT_KEYS = ((1.0, 0.0), (0.0, 1.0), (-1.0, -1.0))
#: One 2-D value per key; their triangle is the hull the output must stay in.
DEFAULT_VALUES = ((2.0, 0.0), (0.0, 2.5), (-2.0, -1.0))
