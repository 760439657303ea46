"""The `keras-s2s` commands, one module per subject: runs (list, train, evaluate, average, export),
translation (translate, encode), speech (transcribe, speech-corpus, lm) and synthesis. Each holds
its commands' arguments and bodies and lists them in `COMMANDS`; `keras_s2s.cli` puts the rows in
its table and runs them.
"""
