"""The ids every subword vocabulary of the zoo reserves, shared by tokenizers, models and decoders.

A leaf module: models and decoders take the ids from here, not from the tokenizer.

Example:
    >>> from keras_s2s.token_ids import BOS_ID, EOS_ID
    >>> [BOS_ID, 57, 12, EOS_ID]  # a target sequence as the decoder sees it
    [2, 57, 12, 3]
"""

PAD_ID = 0  # padding; masked out of losses and attention
UNK_ID = 1  # a piece the vocabulary does not have
BOS_ID = 2  # begins every decoder input
EOS_ID = 3  # ends every target
