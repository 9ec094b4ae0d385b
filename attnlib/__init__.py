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

# Model parts: heads, positions, blocks, a tiny trainable model, long sequences.
from .blockwise import BlockwiseStep, blockwise_attention, blockwise_attention_steps
from .costs import (CostRow, allocated_bytes, complexity_table, layer_costs, median_time,
                    written_out_attention)
from .multihead import (MultiHeadAttention, head_projection, merge_heads,
                        multihead_by_separate_heads, one_wide_head, split_heads)
from .positional import (PositionalEncoding, offset_rotation, permute_tokens,
                         sinusoidal_encoding, sinusoidal_frequencies)
from .seq2seq import (Seq2SeqTransformer, ToyBatch, TrainHistory, anti_diagonal_mass,
                      copy_batch, cross_attention_maps, greedy_decode, make_batch,
                      reversal_batch, sequence_accuracy, sort_batch, train_seq2seq)
from .transformer import (DecoderBlock, EncoderBlock, FeedForward, batch_norm_tokens,
                          layer_norm, norm_context_dependence)


__version__ = "0.1.0"
