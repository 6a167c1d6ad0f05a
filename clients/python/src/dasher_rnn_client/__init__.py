"""A client of the dasher-rnn predictor API (``dasher-rnn serve``), for any Python from 3.9.

    from dasher_rnn_client import DasherClient, DasherRNNLanguageModel

It needs httpx alone; ``websockets`` for a session's WebSocket and numpy for array results are optional.
"""

from dasher_rnn_client.bcipy import (
    DasherRNNLanguageModel,
    InvalidSymbolSet,
    InvalidSymbolSetException,
    LanguageModelUnavailable,
)
from dasher_rnn_client.client import ClientError, ClientSession, DasherClient, WebSocketChannel

__version__ = "0.1.0"
__all__ = ["ClientError", "ClientSession", "DasherClient", "DasherRNNLanguageModel", "InvalidSymbolSet",
           "InvalidSymbolSetException", "LanguageModelUnavailable", "WebSocketChannel"]
