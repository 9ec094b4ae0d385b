"""Utilities with no mathematics: devices and seeds, rounded printing, and (private) the input
checks and the optional-extras guard that every layer uses."""
