"""attnlib: the mathematics of attention and the Transformer, small and exact, in pure torch.

Shape legend (PyTorch's): B batch, H heads, L query length, S key length, D model width,
Dh head width. Masks are boolean with True = "may attend"; float masks are added to scores.
"""

from .additive import AdditiveAttention
from .attention import dot_product_attention
from .device import default_device, set_seed
from .gradients import attention_backward
from .masks import causal_mask, padding_mask
from .scoring import (SCORE_FUNCTIONS, cosine_score, dot_score, euclidean_distance,
                      gaussian_score, nadaraya_watson, neg_euclidean_score, scaled_dot_score)
from .softmax import masked_softmax, softmax_jacobian

# --- model parts (helper model) ---

# --- end model parts ---

__version__ = "0.1.0"
