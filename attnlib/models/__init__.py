"""The two whole models, each in its own folder with its config beside it: ``seq2seq`` (notebook
08's tiny trainable encoder-decoder, its data and trainer) and ``minilm`` (all-MiniLM-L6-v2
rebuilt from attnlib's blocks, notebook 10)."""
