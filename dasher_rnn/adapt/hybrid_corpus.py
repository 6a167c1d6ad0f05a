"""The hybrid's PPM and mixing weights learn a user's corpus, message by message, as if it had been
written in the app: PPM counts every character, and the weights learn from the RNN's probability of
each character (one forward call per message). Saved with the profile (``ppm.safetensors``)."""

from __future__ import annotations

from pathlib import Path

import torch
from tqdm import tqdm

from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig, split_messages
from dasher_rnn.adapt.user_corpus import Document
from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.hybrid import HybridMixer
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.lm.rnn import CharRNN
from dasher_rnn.lm.rnn_lm import RNNLanguageModel


@torch.no_grad()
def learn_corpus(mixer: HybridMixer, model: CharRNN, alphabet: Alphabet, documents: list[Document],
                 progress: bool = True) -> int:
    """Every line of ``documents`` is a message (as ``dasher-rnn adapt`` splits them); returns the number
    of characters learned."""
    messages, _ = split_messages(documents, alphabet, CorpusAdaptConfig().max_unknown)
    rnn = RNNLanguageModel(model, alphabet)
    learned = 0
    for message in tqdm(messages, unit="message", disable=not progress, desc="PPM"):
        mixer.new_message()
        rnn.reset()
        probs = rnn.sequence_probs(message.symbols)
        for i, symbol in enumerate(message.symbols):
            mixer.commit(symbol, float(probs[i, symbol]))
        learned += len(message.symbols)
    mixer.new_message()
    return learned


def adapt_profile_ppm(state_file: Path, base_ppm: PPMModel, model: CharRNN, alphabet: Alphabet,
                      documents: list[Document], progress: bool = True) -> tuple[int, str | None]:
    """Load the profile's PPM state (or start from ``base_ppm``), learn ``documents``, save atomically.
    Returns (characters learned, a notice about a state file that could not be used)."""
    mixer = HybridMixer(base_ppm)
    notice = mixer.load(state_file)
    count = learn_corpus(mixer, model, alphabet, documents, progress)
    mixer.save(state_file)
    return count, notice
