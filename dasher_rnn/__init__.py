"""dasher-rnn: Dasher-style text entry driven by an adaptive character-level recurrent network."""

__version__ = "0.1.0"
