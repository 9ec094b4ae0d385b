"""The notebooks the browser test opens, and the widget builders each one must show.

One line per notebook: ``"NN_name.ipynb": ["builder", ...]`` with names from
``attnlib.widgets.BUILDERS``. The test runs the notebook in JupyterLab, drags the first slider of
each explorer it shows and checks the readout and the picture against the same builder in Python.
"""

NOTEBOOKS: dict[str, list[str]] = {
    "00_attention_pooling.ipynb": ["kernel_regression", "additive_attention"],
    "01_qkv_roles.ipynb": ["query"],
}
