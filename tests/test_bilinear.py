"""The learned bilinear score e_ij = x_i W_Q W_Kᵀ x_jᵀ (C04) and its picture
(attnlib.figures.bilinear).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from attnlib import dot_score
from attnlib.core.scoring import score_asymmetry
from attnlib.figures import FIGURES
from attnlib.figures.bilinear import bilinear_asymmetry_figure
from attnlib.plotting import score_asymmetry_panels


def test_c04_projected_dot_product_is_the_bilinear_form_and_not_symmetric(device):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(5, 4, generator=g, dtype=torch.float64).to(device)
    w_q = torch.randn(4, 3, generator=g, dtype=torch.float64).to(device)
    w_k = torch.randn(4, 3, generator=g, dtype=torch.float64).to(device)
    e = dot_score(x @ w_q, x @ w_k)  # (5, 5)
    # reference: the explicit double sum x_i M x_j with M = W_Q W_Kᵀ
    m = w_q @ w_k.T
    ref = torch.einsum("ia,ab,jb->ij", x, m, x)
    torch.testing.assert_close(e, ref)
    assert (e - e.T).abs().max() > 1e-3
    # tied projections give a symmetric M and a symmetric score matrix
    e_tied = dot_score(x @ w_q, x @ w_q)
    torch.testing.assert_close(e_tied, e_tied.T)


def test_score_asymmetry_draws_e_its_transpose_and_the_difference():
    e = torch.tensor([[1.0, 2.0], [-3.0, 0.5]])
    fig = Figure()
    axes = fig.subplots(1, 3)
    asym = score_asymmetry(e)
    np.testing.assert_array_equal(asym.transposed.numpy(), e.numpy().T)
    np.testing.assert_array_equal(asym.difference.numpy(), e.numpy() - e.numpy().T)
    images, texts = score_asymmetry_panels(asym, axes, labels=["a", "b"])
    np.testing.assert_allclose(images[0].get_array(), e.numpy())
    np.testing.assert_allclose(images[1].get_array(), e.numpy().T)
    np.testing.assert_allclose(images[2].get_array(), (e - e.T).numpy())
    assert texts[0][0][1].get_text() == "2.0" and texts[1][0][1].get_text() == "-3.0"
    lo, hi = images[0].get_clim()
    assert lo == -hi == -5.0  # one symmetric colour scale for all panels (|e12 - e21| = 5)


def test_score_asymmetry_bad_input():
    with pytest.raises(ValueError, match="square"):
        score_asymmetry(torch.zeros(2, 3))
    fig = Figure()
    with pytest.raises(ValueError, match="labels"):
        score_asymmetry_panels(score_asymmetry(torch.zeros(2, 2)), fig.subplots(1, 3), labels=["a"])
    with pytest.raises(ValueError, match="3 axes"):
        score_asymmetry_panels(score_asymmetry(torch.zeros(2, 2)), fig.subplots(1, 2))
    with pytest.raises(TypeError, match="scores"):
        score_asymmetry([[1.0, 2.0], [3.0, 4.0]])


def test_bilinear_figure_is_registered_and_deterministic():
    assert FIGURES["bilinear_asymmetry"] is bilinear_asymmetry_figure
    a = bilinear_asymmetry_figure()
    b = bilinear_asymmetry_figure()
    arr_a = a.axes[0].images[0].get_array()
    np.testing.assert_array_equal(arr_a, b.axes[0].images[0].get_array())
    np.testing.assert_allclose(a.axes[2].images[0].get_array(), arr_a - arr_a.T)
