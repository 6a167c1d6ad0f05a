import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_a_sub_microsecond_step_does_not_make_nan():
    """Issue 21: ``0.1 0.1 0`` then ``0.9 0.9 5e-324`` made the output NaN for ever."""
    f = OneEuroFilter()
    f.filter(0.1, 0.1, 0.0)
    assert f.filter(0.9, 0.9, 5e-324) == (0.1, 0.1)  # too close to tell a speed from: the previous output
    x, y = f.filter(0.9, 0.9, 1 / RATE)
    assert 0.1 < x < 0.9 and 0.1 < y < 0.9  # and the filter still follows


def test_a_step_that_overflows_restarts_from_the_point():
    f = OneEuroFilter()
    f.filter(-1e308, 0.0, -1e308)
    assert f.filter(1e308, 0.5, 1e308) == (1e308, 0.5)  # dt and the speed overflow: start afresh
    f.filter(-1e308, 0.0, 1e308 + 1e293)
    assert all(math.isfinite(v) for v in f.filter(0.0, 0.0, 1e308 + 2e293))


finite = st.floats(allow_nan=False, allow_infinity=False)
times = st.one_of(finite, st.sampled_from([0.0, 5e-324, -5e-324, 1e-310, 1e-7]))  # and steps too small for a speed


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(finite, finite, times), max_size=30),
       st.floats(1e-3, 10.0), st.floats(0.0, 10.0))
def test_any_finite_input_gives_finite_output(points, min_cutoff, beta):
    f = OneEuroFilter(min_cutoff=min_cutoff, beta=beta)
    for x, y, t in points:
        out = f.filter(x, y, t)
        assert all(math.isfinite(v) for v in out), (x, y, t, out)
