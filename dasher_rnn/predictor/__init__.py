"""The predictor service: batched next-character distributions over a tree of contexts."""

from dasher_rnn.predictor.backends import BACKENDS, OnnxBackend, TorchBackend, make_backend
from dasher_rnn.predictor.service import Distribution, PredictorService, ServiceClosed
from dasher_rnn.predictor.tree import Node, NodeError

__all__ = ["BACKENDS", "Distribution", "Node", "NodeError", "OnnxBackend", "PredictorService", "ServiceClosed",
           "TorchBackend", "make_backend"]
