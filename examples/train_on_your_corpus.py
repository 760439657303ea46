"""Train GNMT on your own parallel corpus with the Python API, then translate.

    python examples/train_on_your_corpus.py train.en train.de
    python examples/train_on_your_corpus.py corpus.tsv          # source<TAB>target
    python examples/train_on_your_corpus.py demo                # the built-in task

Everything here is public API; `keras-s2s train gnmt --data train.en,train.de`
does the same from the command line (plus checkpoints, resume and TensorBoard).
"""

import sys

import keras

import keras_s2s

source = sys.argv[1:] if len(sys.argv) > 2 else (sys.argv[1] if len(sys.argv) == 2 else "demo")
data = keras_s2s.data.load_parallel_data(
    source, vocab_size=2000, num_train=20000, batching=keras_s2s.data.Batching(batch_size=64)
)
model = keras_s2s.zoo.load(
    "gnmt", tokenizer=data.tokenizer, num_layers=2, units=256, learning_rate=3e-3
)
model.fit(data.train, validation_data=data.valid, epochs=3)

hypotheses = model.translate(data.test_sources)
for src, hyp in list(zip(data.test_sources, hypotheses))[:5]:
    print(f"{src}\n  -> {hyp}")
model.save("my_gnmt.keras")  # the tokenizer is saved inside
print(keras.saving.load_model("my_gnmt.keras").translate(data.test_sources[:1]))
