"""attnlib: the mathematics of attention and the Transformer, small and exact, in pure torch.

Shape legend (PyTorch's): B batch, H heads, L query length, S key length, T target length
(decoder steps), D model width, Dh head width, Dk query/key width, Dv value width. Masks are
boolean with True = "may attend"; float masks are added to scores.

Names: functions take ``q, k, v``; a module's ``forward`` takes ``query, key, value``.
"Average over heads" is ``head=None``. Wrong types raise ``TypeError``, wrong values
``ValueError``, both naming the argument.

Results: an attention call returns the pair ``(out, weights)``, a plain tuple because it is
always unpacked at once. Anything with more or other parts (a table, a trace, a demo's inputs, a
model's pass) is a frozen dataclass: its fields are read by name, it cannot be changed by
accident, and it prints itself; a field that holds one tensor per layer is a tuple, not a list.
We chose dataclasses over NamedTuples because such a result is never unpacked positionally, and a
NamedTuple would let ``table[2]`` silently mean whichever field is third. The results:

- ``core``: ``ScoreAsymmetry``, ``NormContextChange``, ``BlockwiseStep``,
  ``OnlineSoftmaxTrace``;
- ``models.seq2seq``: ``Seq2SeqOutput`` (the forward), ``EncodeOutput`` (``encode``),
  ``DecodeOutput`` (``decode``), ``GreedyDecode`` (``greedy_decode``), ``ToyBatch``,
  ``TrainHistory``; ``models.minilm``: ``TokenBatch``, ``EncoderOutput``; ``models.gpt``:
  ``GPTOutput``, ``KVCache``, ``CacheShape``;
- ``course``: ``DemoProjections``, ``DemoBatch`` (``examples``), ``VarianceTable``,
  ``SharpnessTable``, ``SpreadJacobians`` (``scaling``), ``MaskedRowCase`` (``pitfalls``),
  ``TheoreticalCosts``, ``CostRow`` (``costs``), ``QKVariance``, ``HeadView`` (``head_stats``),
  ``DecodingTrace`` (``decoding``), ``DecodeCostRow``, ``CacheSizeRow`` (``kv_cache``).

The configs (``Seq2SeqConfig``, ``TrainConfig``, ``MiniLMConfig``, ``GPTConfig``) are frozen
dataclasses too, and every model or trainer takes its one as ``config``. The other plain tuples
follow a convention their caller already knows and unpacks at once: kernel regression's
``(prediction, weights)`` is an attention call's pair, ``attention_backward`` gives ``(dq, dk,
dv)`` in ``torch.autograd.grad``'s order, ``head_projection`` ``(weight, bias)`` as ``nn.Linear``
holds them, the GPT's ``head_weights`` ``(W_Q, W_K, W_V, W_O)`` as the papers name them; data
comes as ``(x, y)``, an estimate as ``(value, stderr)``, a fit as ``(sigma, losses)``.
Mutable on purpose: ``plotting``'s artists (matplotlib handles, changed after drawing) and the
explorers' scene parts (built up, then sent).

Layers, each importing only those below it (``tests/test_layering.py`` checks it): ``util``
(private checks, devices, rounding) < ``core`` (masks, softmax, scoring, attention, heads,
positions, blocks) < ``models`` (the toy encoder-decoder, MiniLM and the GPT, each with its
config) < ``course`` (the notebooks' experiments and demo inputs) < ``plotting`` (drawing from
data, no math) < ``figures`` (one key picture each) and ``widgets`` (the explorers:
``framework`` and ``explorers``); the notebooks on top.
"""

from attnlib.core.additive import AdditiveAttention
from attnlib.core.attention import dot_product_attention

# Model parts: heads, positions, blocks, a tiny trainable model, long sequences.
from attnlib.core.blockwise import BlockwiseStep, blockwise_attention, blockwise_attention_steps
from attnlib.core.gradients import attention_backward
from attnlib.core.masks import causal_mask, padding_mask
from attnlib.core.multihead import (
    MultiHeadAttention,
    head_projection,
    merge_heads,
    multihead_by_separate_heads,
    one_wide_head,
    split_heads,
)
from attnlib.core.normalization import batch_norm_tokens, norm_context_dependence
from attnlib.core.positional import (
    PositionalEncoding,
    offset_rotation,
    permute_tokens,
    sinusoidal_encoding,
    sinusoidal_frequencies,
)
from attnlib.core.scoring import (
    SCORE_FUNCTIONS,
    ScoreAsymmetry,
    cosine_score,
    dot_score,
    euclidean_distance,
    gaussian_score,
    nadaraya_watson,
    neg_euclidean_score,
    scaled_dot_score,
    score_asymmetry,
)
from attnlib.core.softmax import masked_softmax, softmax_jacobian
from attnlib.core.transformer import (
    DecoderBlock,
    EncoderBlock,
    FeedForward,
    layer_norm,
)
from attnlib.course.costs import (
    CostRow,
    complexity_table,
    layer_costs,
    median_time,
    written_out_attention,
)
from attnlib.course.decoding import DecodingTrace, anti_diagonal_mass, trace_greedy_decoding
from attnlib.course.memory import allocated_bytes
from attnlib.models.seq2seq.config import Seq2SeqConfig, TrainConfig
from attnlib.models.seq2seq.model import (
    DecodeOutput,
    EncodeOutput,
    GreedyDecode,
    Seq2SeqOutput,
    Seq2SeqTransformer,
    eval_mode,
    greedy_decode,
)
from attnlib.models.seq2seq.toy_tasks import ToyBatch, make_batch, token_labels
from attnlib.models.seq2seq.training import TrainHistory, evaluate, sequence_accuracy, train_seq2seq
from attnlib.util.device import default_device, set_seed
from attnlib.util.i18n import get_language, language, set_language

__version__ = "0.1.0"
