import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dasher_rnn.lm.model_io import load_model
from dasher_rnn.predictor import NodeError, PredictorService, ServiceClosed

TEXT = st.text(alphabet="abcdeIT .,?!\n", max_size=25)


@pytest.fixture(scope="module", params=["torch", "onnx"])
def service(request, tiny_model_dir):
    with PredictorService.from_dir(tiny_model_dir, backend=request.param, budget=200) as svc:
        yield svc


@pytest.fixture(scope="module")
def reference(tiny_model_dir):
    model, alphabet, _ = load_model(tiny_model_dir)

    def run(text: str) -> np.ndarray:
        """Log-probs after ``text`` by running the network over the whole string from the learned state."""
        with torch.no_grad():
            h, c = model.initial_state(1)
            if not text:
                return torch.log_softmax(model.head(h[-1]), -1)[0].numpy()
            logp, _ = model(torch.tensor([[alphabet.index(ch) for ch in text]]), (h, c))
            return logp[0, -1].numpy()

    return run


@settings(max_examples=25, deadline=None)
@given(prefix=TEXT, suffix=TEXT)
def test_tree_distributions_equal_running_the_full_string(service, reference, prefix, suffix):
    node = service.root(prefix)
    path = [node]
    for ch in suffix:
        path.append(service.child(path[-1], ch))
    dists = service.distributions(path)
    for i, dist in enumerate(dists):
        assert np.allclose(dist.log_probs, reference(prefix + suffix[:i]), atol=1e-4)
        assert dist.counts.sum() == 65536 and dist.counts.min() >= 1 and dist.log_probs.dtype == np.float32
    service.release(node)


def test_batched_siblings_and_eviction_keep_results_exact(service, reference):
    root = service.root("I need")
    children = [service.child(root, ch) for ch in service.alphabet.symbols]
    dists = service.distributions(children)
    for ch, d in zip(service.alphabet.symbols, dists, strict=True):
        assert np.allclose(d.log_probs, reference("I need" + ch), atol=1e-4)
    # grow far past the 200-node budget, then ask for a deep node whose ancestors were evicted
    deep = root
    for ch in " some tea" * 30:
        deep = service.child(deep, ch)
        service.distributions([deep])
    assert service.tree.cached_nodes <= 200
    early = service.child(service.child(root, " "), "s")
    assert np.allclose(service.distributions([early])[0].log_probs, reference("I need s"), atol=1e-4)
    service.release(root)


def test_context_is_cut_at_characters_outside_the_alphabet(service, reference):
    node = service.root("x\u4e2d\u6587I need")
    assert np.allclose(service.distributions([node])[0].log_probs, reference("I need"), atol=1e-4)
    assert np.allclose(service.predict_texts([""])[0].log_probs, reference(""), atol=1e-4)


def test_bad_input_gets_clear_errors(service, tiny_model_dir):
    root = service.root("")
    with pytest.raises(ValueError, match="not in alphabet"):
        service.child(root, "\u4e2d")
    with pytest.raises(ValueError, match="not an index"):
        service.child(root, 500)
    kid = service.child(root, "a")
    service.release(root)
    service.distributions([service.root("")])  # the release has been processed by now
    with pytest.raises(NodeError, match="released"):
        service.child(kid, "b")
    with pytest.raises(NodeError, match="released"):
        service.request([kid])
    with PredictorService.from_dir(tiny_model_dir, backend="torch") as other:
        with pytest.raises(NodeError, match="not a node of this predictor"):
            other.request([service.root("")])


def test_a_request_under_a_released_node_fails_alone(tiny_model_dir):
    with PredictorService.from_dir(tiny_model_dir, backend="torch") as svc:
        doomed_root, good_root = svc.root("I"), svc.root("We")
        doomed = svc.child(svc.child(doomed_root, " "), "n")
        gate = threading.Event()
        blocker = svc._call(gate.wait)
        bad = svc.request([doomed])
        good = svc.request([svc.child(good_root, " ")])
        svc._call(svc.tree.release, doomed_root)  # processed before the merged batch
        gate.set()
        blocker.result(5)
        assert len(good.result(5)) == 1
        with pytest.raises(NodeError, match="released"):
            bad.result(5)


def test_a_context_released_and_asked_for_again_gets_a_fresh_node(tiny_model_dir):
    """The release runs later on the worker: asking for the same child before then must not hand out the
    node that is about to be released (the zoom drops and re-creates boxes all the time)."""
    with PredictorService.from_dir(tiny_model_dir, "torch") as service:
        root = service.root("")
        old = service.child(root, "a")
        gate = threading.Event()
        blocker = service._call(gate.wait)  # hold the worker so the release is still queued
        service.release(old)
        new = service.child(root, "a")
        gate.set()
        blocker.result(5)
        assert new is not old
        grandchild = service.child(new, "b")
        (dist,) = service.distributions([grandchild])
        assert dist.counts.sum() == 65536 and not new.released


def test_very_long_context_is_processed(service, reference):
    text = "I need some tea. " * 6000  # 102k characters
    start = time.perf_counter()
    node = service.root(text)
    assert time.perf_counter() - start < 120
    assert np.isfinite(service.distributions([node])[0].log_probs).all()
    service.release(node)


def test_priority_cancellation_and_callbacks(tiny_model_dir):
    with PredictorService.from_dir(tiny_model_dir, backend="torch", max_batch=4) as svc:
        root = svc.root("")
        gate, holding = threading.Event(), threading.Event()
        blocker = svc._call(lambda: (holding.set(), gate.wait()))  # hold the worker so requests pile up
        assert holding.wait(5)  # the worker is inside the blocker: nothing below is drained before the gate opens
        order = []
        low = svc.request([svc.child(root, "a")], priority=1.0, callback=lambda d: order.append("low"))
        high = svc.request([svc.child(root, "b")], priority=9.0, callback=lambda d: order.append("high"))
        dropped = svc.request([svc.child(root, "c")], priority=5.0, callback=lambda d: order.append("dropped"))
        assert dropped.cancel()
        big = [svc.child(root, ch) for ch in "defg"]
        big_future = svc.request(big, priority=3.0, callback=lambda d: order.append("big"))
        gate.set()
        blocker.result(5)
        assert len(low.result(5)) == 1 and len(high.result(5)) == 1 and len(big_future.result(5)) == 4
        assert order == ["high", "big", "low"]  # by priority, at most 4 nodes per batch, cancelled dropped


def test_shutdown_joins_the_worker_and_later_calls_fail(tiny_model_dir):
    svc = PredictorService.from_dir(tiny_model_dir, backend="torch")
    root = svc.root("")
    svc.close()
    assert not svc._worker.is_alive()
    with pytest.raises(ServiceClosed):
        svc.request([root])
    with pytest.raises(ServiceClosed):
        svc.root("")
    svc.close()  # twice is fine


def test_weight_swap_applies_to_new_nodes_only(tiny_model_dir, reference):
    model, _, _ = load_model(tiny_model_dir)
    with PredictorService.from_dir(tiny_model_dir, backend="torch") as svc:
        root = svc.root("I")
        before = svc.distributions([svc.child(root, " ")])[0]
        shifted = {k: v + 0.05 if k == "head.bias" else v for k, v in model.state_dict().items()}
        shifted["head.weight"] = model.head.weight.detach() * 1.5
        assert svc.set_weights(shifted).result(5) == 1
        again = svc.distributions([svc.child(root, " ")])[0]
        fresh = svc.distributions([svc.child(root, "n")])[0]
        assert np.array_equal(again.log_probs, before.log_probs)  # handed out before: unchanged
        assert not np.allclose(fresh.log_probs, reference("In"), atol=1e-3)  # created after: new weights
    with PredictorService.from_dir(tiny_model_dir, backend="onnx") as svc:
        with pytest.raises(NotImplementedError, match="cannot swap weights"):
            svc.set_weights(shifted)


def test_fused_lstm_step_equals_the_model_step():
    from dasher_rnn.lm.rnn import CharRNN, RNNConfig
    from dasher_rnn.predictor.backends import FusedLSTMStep

    torch.manual_seed(0)
    model = CharRNN(RNNConfig(vocab_size=20, embed_size=6, hidden_size=16, layers=2)).eval()
    symbols = torch.randint(0, 20, (5,))
    h, c = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
    with torch.no_grad():
        ref, (h_ref, c_ref) = model.step(symbols, (h, c))
        out, h_out, c_out = FusedLSTMStep(model)(symbols, h, c)
    for a, b in ((ref, out), (h_ref, h_out), (c_ref, c_out)):
        assert torch.allclose(a, b, atol=1e-6)


def test_onnx_backend_does_not_import_torch(tiny_model_dir):
    code = (
        "import sys\n"
        "from dasher_rnn.predictor import PredictorService\n"
        f"svc = PredictorService.from_dir({str(tiny_model_dir)!r}, backend='onnx')\n"
        "d = svc.predict_texts(['I need', ''])\n"
        "svc.close()\n"
        "assert d[0].counts.sum() == 65536\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class GatedBackend:
    """A backend whose calls wait until ``go`` is set, and which records what each call read."""

    def __init__(self, backend):
        self.inner, self.go, self.calls = backend, threading.Event(), []
        for name in ("name", "layers", "hidden", "cell_size", "vocab"):
            setattr(self, name, getattr(backend, name))

    def initial(self):
        return self.inner.initial()

    def step(self, symbols, h, c):
        self.go.wait(60)
        self.calls.append(("step", len(symbols)))
        return self.inner.step(symbols, h, c)

    def run(self, symbols, h, c):
        self.go.wait(60)
        self.calls.append(("run", len(symbols)))
        return self.inner.run(symbols, h, c)


def test_a_long_root_is_read_in_chunks_and_a_short_one_is_served_in_between(tiny_model_dir, reference):
    from dasher_rnn.lm.model_io import read_checked_config
    from dasher_rnn.predictor.backends import make_backend

    _, alphabet = read_checked_config(tiny_model_dir)
    backend = GatedBackend(make_backend(tiny_model_dir, "onnx"))
    long_text, short_text = ("I want tea. " * 60)[:700], "You"
    with PredictorService(backend, alphabet, budget=50, root_chunk=64) as svc:
        done = []
        long_root = svc.root_async(long_text)
        long_root.add_done_callback(lambda f: done.append("long"))
        short_root = svc.root_async(short_text)
        short_root.add_done_callback(lambda f: done.append("short"))
        backend.go.set()  # both are queued before the worker reads anything
        np.testing.assert_allclose(svc.distributions([long_root.result(60)])[0].log_probs, reference(long_text),
                                   atol=1e-4)
        assert done == ["short", "long"]
        assert max(n for _, n in backend.calls) <= 64  # never more than a chunk at once
        np.testing.assert_allclose(short_root.result().log_probs, reference(short_text), atol=1e-4)


def test_long_roots_read_together_equal_roots_read_alone(tiny_model_dir, reference):
    texts = [("We walk home. " * 40)[:n] for n in (300, 450, 129, 64)] + ["", "I"]
    with PredictorService.from_dir(tiny_model_dir, "onnx", root_chunk=32) as svc:
        futures = [svc.root_async(t) for t in texts]
        for text, future in zip(texts, futures, strict=True):
            np.testing.assert_allclose(future.result(60).log_probs, reference(text), atol=1e-4)


def test_a_cancelled_long_root_stops_and_leaves_nothing_behind(tiny_model_dir):
    from dasher_rnn.lm.model_io import read_checked_config
    from dasher_rnn.predictor.backends import make_backend

    _, alphabet = read_checked_config(tiny_model_dir)
    backend = GatedBackend(make_backend(tiny_model_dir, "onnx"))
    with PredictorService(backend, alphabet, budget=50, root_chunk=16) as svc:
        future = svc.root_async("I want tea. " * 50)
        assert future.cancel()  # still reading (the backend has not started)
        backend.go.set()
        svc.root("I")  # the worker has gone round since
        assert svc.tree.cached_nodes == 1  # only the short root's: the cancelled one took no slot
        assert sum(n for _, n in backend.calls) < 16 * 3  # it stopped after at most a chunk
