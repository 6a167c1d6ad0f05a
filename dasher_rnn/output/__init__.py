"""Where the written text goes besides our panel: typed into another program (direct output)."""

from dasher_rnn.output.direct import DirectOutput
from dasher_rnn.output.typers import OutputUnavailable, Typer, TypingError, open_typer

__all__ = ["DirectOutput", "OutputUnavailable", "Typer", "TypingError", "open_typer"]
