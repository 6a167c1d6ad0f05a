import random
import statistics

import pytest

from dasher_rnn.input.one_euro import OneEuroFilter

RATE = 60.0


def run(f: OneEuroFilter, points):
    return [f.filter(x, y, i / RATE) for i, (x, y) in enumerate(points)]


def test_constant_input_stays_constant():
    out = run(OneEuroFilter(), [(0.3, 0.7)] * 100)
    assert all(p == pytest.approx((0.3, 0.7)) for p in out)


def test_noisy_stationary_signal_is_smoothed():
    rng = random.Random(1)
    noisy = [(0.5 + rng.gauss(0, 0.01), 0.5 + rng.gauss(0, 0.01)) for _ in range(600)]
    out = run(OneEuroFilter(min_cutoff=1.0, beta=0.007), noisy)[60:]
    assert statistics.pvariance([x for x, _ in out]) < statistics.pvariance([x for x, _ in noisy]) / 10
    assert statistics.pvariance([y for _, y in out]) < statistics.pvariance([y for _, y in noisy]) / 10


def test_step_is_followed():
    out = run(OneEuroFilter(), [(0.0, 0.0)] * 30 + [(1.0, -1.0)] * 300)
    assert 0.0 < out[31][0] < 1.0  # smoothed, not a jump
    assert out[-1] == pytest.approx((1.0, -1.0), abs=1e-3)


def test_larger_beta_lags_less_on_a_fast_ramp():
    ramp = [(i / RATE * 2.0, 0.0) for i in range(120)]  # 2 units per second
    slow, fast = run(OneEuroFilter(beta=0.0), ramp), run(OneEuroFilter(beta=5.0), ramp)
    target = ramp[-1][0]
    assert target - fast[-1][0] < (target - slow[-1][0]) / 2


def test_repeated_or_earlier_timestamps_return_previous_output():
    f = OneEuroFilter()
    f.filter(0.0, 0.0, 1.0)
    first = f.filter(1.0, 1.0, 1.1)
    assert f.filter(5.0, 5.0, 1.1) == first
    assert f.filter(5.0, 5.0, 1.0) == first


def test_reset_forgets_history():
    f = OneEuroFilter()
    run(f, [(0.0, 0.0)] * 10)
    f.reset()
    assert f.filter(0.9, 0.1, 0.0) == (0.9, 0.1)


def test_bad_parameters_and_input_raise_clear_errors():
    with pytest.raises(ValueError, match="min_cutoff"):
        OneEuroFilter(min_cutoff=0)
    with pytest.raises(ValueError, match="non-finite"):
        OneEuroFilter().filter(float("nan"), 0.0, 0.0)
