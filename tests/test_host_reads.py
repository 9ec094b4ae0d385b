"""Checks happen once, at the public boundary: a public call reads at most 2 values from its
tensors into Python (on a GPU each such read waits for the device), and the blocks a checked
model runs read none.

The counter (:mod:`attnlib.util.host_reads`, a ``TorchFunctionMode``) counts the calls through
which a tensor's value reaches Python (``item``, ``tolist``, ``bool``, ``int``, ``float``,
``__index__``); it is checked first on a function whose reads are counted by hand. "None inside
the blocks" is tested by the count not changing with the number of layers.
"""

from __future__ import annotations

import pytest
import torch

from attnlib.core.attention import dot_product_attention
from attnlib.core.multihead import MultiHeadAttention
from attnlib.core.transformer import DecoderBlock, EncoderBlock
from attnlib.models.minilm import MiniLMConfig, MiniLMEncoder
from attnlib.models.seq2seq.config import Seq2SeqConfig
from attnlib.models.seq2seq.model import Seq2SeqTransformer
from attnlib.util.host_reads import host_reads

LIMIT = 2  # host reads per public call (issue 17)


def _seven_reads(t: torch.Tensor) -> None:
    t.item()  # 1
    t.tolist()  # 2
    bool(t > 0)  # 3
    int(t)  # 4
    float(t)  # 5
    [10, 20, 30][t]  # 6: __index__
    if t:  # 7: __bool__
        pass
    t + 1, t.shape[0] if t.dim() else 0, t.numel()  # shapes and arithmetic read no value


def test_the_counter_counts_a_known_number_of_reads():
    names = host_reads(_seven_reads, torch.tensor(1))
    assert len(names) == 7, names
    assert sorted(set(names)) == sorted(
        ["item", "tolist", "__bool__", "__int__", "__float__", "__index__"]
    )
    assert host_reads(lambda t: (t @ t.T).softmax(-1), torch.randn(3, 3)) == []


def _tiny_minilm(num_layers: int) -> MiniLMEncoder:
    config = MiniLMConfig(
        vocab_size=50, d_model=24, num_layers=num_layers, num_heads=3, d_ff=32, max_positions=300
    )
    return MiniLMEncoder(config).eval()


def test_minilm_forward_reads_at_most_twice_and_its_blocks_never():
    ids = torch.randint(0, 50, (2, 256))
    lens = torch.tensor([256, 100])
    counts = {}
    for layers in (1, 6):
        enc = _tiny_minilm(layers)
        head_mask = torch.ones(layers, 3)
        with torch.no_grad():
            counts[layers] = len(host_reads(enc, ids, valid_lens=lens, head_mask=head_mask))
            assert len(host_reads(enc, ids)) <= LIMIT
    assert counts[6] <= LIMIT
    assert counts[6] == counts[1]  # six blocks read no more than one: the blocks read nothing


def test_multihead_attention_forward_reads_at_most_twice():
    mha = MultiHeadAttention(16, 4)
    x, mem = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    mask = torch.rand(2, 5, 7) > 0.3
    lens = torch.tensor([7, 3])
    names = host_reads(
        mha, x, mem, mem, mask, valid_lens=lens, is_causal=True, head_mask=torch.ones(4)
    )
    assert len(names) <= LIMIT, names


def test_dot_product_attention_reads_at_most_twice():
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 4)
    lens = torch.tensor([[6, 1, 2, 3, 4], [0, 6, 6, 6, 6]])
    names = host_reads(
        dot_product_attention, q, k, v, torch.randn(5, 6), valid_lens=lens, is_causal=True
    )
    assert len(names) <= LIMIT, names
    assert host_reads(dot_product_attention, q, k, v) == []  # nothing to check by value


@pytest.mark.parametrize("norm_first", [False, True])
def test_blocks_called_directly_read_at_most_twice(norm_first):
    enc = EncoderBlock(16, 4, 32, norm_first=norm_first)
    dec = DecoderBlock(16, 4, 32, norm_first=norm_first)
    x, y = torch.randn(2, 6, 16), torch.randn(2, 4, 16)
    lens = torch.tensor([6, 2])
    assert len(host_reads(enc, x, valid_lens=lens, head_mask=torch.ones(2, 4))) <= LIMIT
    assert len(host_reads(dec, y, x, memory_valid_lens=lens)) <= LIMIT


@pytest.mark.parametrize("training", [False, True])
def test_seq2seq_forward_reads_at_most_twice_and_its_blocks_never(training):
    src = torch.randint(3, 13, (3, 8))
    tgt_in = torch.randint(3, 13, (3, 9))
    lens = torch.tensor([8, 5, 1])
    counts = {}
    for layers in (1, 3):
        cfg = Seq2SeqConfig(
            d_model=16,
            num_heads=2,
            d_ff=32,
            num_encoder_layers=layers,
            num_decoder_layers=layers,
            dropout=0.1,
        )
        model = Seq2SeqTransformer(cfg).train(training)
        counts[layers] = len(host_reads(model, src, tgt_in, src_valid_lens=lens))
    assert counts[3] <= LIMIT
    assert counts[3] == counts[1]
