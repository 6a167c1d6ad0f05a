"""Mean squared gradients over training batches (MS_g) for the RMS dynamic-evaluation rules.

Computed once after training with segments as long as dynamic evaluation's (Krause et al. 2018).
The batch size is a hyperparameter: larger batches give smaller MS_g and so bigger RMS steps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dasher_rnn.lm.corpus import BatchStream, Corpus
from dasher_rnn.lm.rnn import CharRNN


def mean_squared_gradients(model: CharRNN, corpus: Corpus, batches: int = 200, batch_size: int = 32,
                           seq_len: int = 20, seed: int = 1234) -> tuple[dict[str, torch.Tensor], dict]:
    """(MS_g per parameter, settings). The state is carried across batches, as in training."""
    device = model.h0.device
    stream = BatchStream(corpus, batch_size, seq_len, seed=seed)
    params = model.network_parameters()
    sums = {n: torch.zeros_like(p) for n, p in params.items()}
    state = model.initial_state(batch_size, learned=False)
    model.eval()
    for step in range(batches):
        inputs, targets, reset = stream.batch(step)
        keep = torch.from_numpy(~reset).to(device).float()[None, :, None]
        state = (state[0] * keep, state[1] * keep)
        with model.gradable():
            logp, state = model(torch.from_numpy(inputs).to(device), state)
        loss = F.nll_loss(logp.reshape(-1, logp.shape[-1]), torch.from_numpy(targets).to(device).reshape(-1),
                          ignore_index=-1)
        model.zero_grad(set_to_none=True)
        loss.backward()
        for n, p in params.items():
            assert p.grad is not None  # every network parameter is in the loss's graph
            sums[n] += p.grad.detach() ** 2
        state = (state[0].detach(), state[1].detach())
    model.zero_grad(set_to_none=True)
    msg = {n: s / batches for n, s in sums.items()}
    return msg, {"batches": batches, "batch_size": batch_size, "seq_len": seq_len}
