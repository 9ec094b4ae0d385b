"""The explorers' framework: controls, the scene and its artists, frames and their wire format,
the :class:`~attnlib.widgets.framework.explorer.Explorer` and its front end ``explorer.js``,
the matplotlib renderer, the readout, and the test helpers."""
