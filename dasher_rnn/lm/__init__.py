"""Language models behind one protocol (``protocol.LanguageModel``): Dasher's PPM and the character RNN."""
