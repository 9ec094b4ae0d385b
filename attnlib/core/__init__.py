"""Core attention, the concepts of the course, one module each: masks, masked softmax, scores,
dot-product and additive attention, pooling, the hand-written backward, multi-head attention,
positions, encoder/decoder blocks, LayerNorm vs BatchNorm, blockwise attention."""
