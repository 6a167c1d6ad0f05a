"""dasher-rnn: Dasher-style text entry driven by an adaptive character-level recurrent network."""

from importlib.metadata import PackageNotFoundError, version

try:
    # the one place the version is written is pyproject.toml; the installed package's metadata carries it
    __version__ = version("dasher-rnn")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "unknown"
