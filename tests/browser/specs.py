"""The notebooks the browser test opens, and the widget builders each one must show.

One line per notebook: ``"NN_name.ipynb": ["builder", ...]`` with names from
``attnlib.widgets.BUILDERS``. The test runs the notebook in JupyterLab, drags the first slider of
each explorer it shows and checks the readout and the picture against the same builder in Python.
"""

NOTEBOOKS: dict[str, list[str]] = {
    "00_attention_pooling.ipynb": ["kernel_regression", "additive_attention"],
    "01_qkv_roles.ipynb": ["query"],
    "02_scaling_variance.ipynb": ["scaling"],
    "03_softmax_gradient.ipynb": ["jacobian"],
    "04_worked_example.ipynb": ["two_key"],
    "05_masking.ipynb": ["masking"],
    "06_multi_head.ipynb": ["heads"],
    "07_positional_encoding.ipynb": ["positions"],
    "08_encoder_decoder.ipynb": ["decoding"],
    "09_long_sequences.ipynb": ["online_softmax"],
    "10_real_heads.ipynb": ["head_view"],
    "11_induction_heads.ipynb": ["induction"],
}
