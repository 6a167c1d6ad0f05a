"""The API's Python client lives in its own small distribution, ``dasher-rnn-client`` (``clients/python``: httpx
alone, Python 3.9 and newer, for programs such as BciPy that cannot install dasher-rnn itself); this name stays for
code written against it."""

from dasher_rnn_client.client import ClientError, ClientSession, DasherClient, WebSocketChannel, to_array

__all__ = ["ClientError", "ClientSession", "DasherClient", "WebSocketChannel", "to_array"]
