"""The whole models, each in its own folder with its config beside it: ``seq2seq`` (notebook
08's tiny trainable encoder-decoder, its data and trainer), ``minilm`` (all-MiniLM-L6-v2
rebuilt from attnlib's blocks, notebook 10) and ``gpt`` (notebook 11's decoder-only model, its
KV cache and grouped-query attention)."""
