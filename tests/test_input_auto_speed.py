import math
import random

import pytest

from dasher_rnn.input.auto_speed import AutoSpeedControl

DT = 1 / 60


def drive(control: AutoSpeedControl, speed: float, angles, radius=1000.0):
    """Steer at these angles, the pointer moving in and out along each (as it follows a growing box)."""
    for i, a in enumerate(angles):
        r = radius * (1 + 0.2 * math.sin(i / 10))
        speed = control.update(speed, r * math.cos(a), r * math.sin(a), DT)
    return speed


def test_steady_angles_raise_the_speed():
    control = AutoSpeedControl()
    speed = drive(control, 1.0, [0.3 + 0.01 * math.sin(i / 7) for i in range(60 * 20)])
    assert speed > 1.3
    assert control.variance < 0.01


def test_erratic_angles_lower_the_speed():
    rng = random.Random(0)
    control = AutoSpeedControl()
    speed = drive(control, 2.0, [rng.uniform(-1.2, 1.2) for _ in range(60 * 20)])
    assert speed < 1.6
    assert control.variance > 0.2


def test_speed_stays_in_bounds():
    control = AutoSpeedControl(min_bps=0.5, max_bps=3.0, adapt_rate=1.0)
    assert drive(control, 2.9, [0.0] * 60 * 30) == pytest.approx(3.0)
    rng = random.Random(1)
    assert drive(control, 0.6, [rng.uniform(-1.2, 1.2) for _ in range(60 * 30)]) == pytest.approx(0.5)
    assert control.update(50.0, 1000.0, 0.0, DT) <= 3.0


def test_no_change_while_reversing_or_on_bad_input():
    control = AutoSpeedControl()
    drive(control, 1.0, [0.0] * 60 * 5)  # a full window of steady angles
    assert control.update(1.0, -500.0, 100.0, DT) == 1.0
    assert control.update(1.0, 0.0, 500.0, DT) == 1.0
    assert control.update(1.0, 1000.0, 0.0, 0.0) == 1.0
    assert control.update(1.0, float("nan"), 0.0, DT) == 1.0


def test_needs_some_history_before_adapting():
    control = AutoSpeedControl(window=2.0)
    assert drive(control, 1.0, [0.0] * 30) == 1.0  # half a second of data


def test_a_resting_pointer_never_raises_the_speed():
    """A hand off the mouse: the angle is perfectly steady, but nobody is steering."""
    control = AutoSpeedControl()
    speed = 1.5
    for _ in range(60 * 30):
        speed = control.update(speed, 1200.0, 40.0, DT)
    assert speed == 1.5 and not control.steering


def test_jitter_within_the_rest_radius_is_resting_and_moving_again_is_steering():
    rng = random.Random(2)
    control = AutoSpeedControl()
    speed = 1.5
    for _ in range(60 * 30):  # a head mouse left pointing somewhere: a few units of jitter
        speed = control.update(speed, 1200.0 + rng.uniform(-10, 10), 40.0 + rng.uniform(-10, 10), DT)
    assert speed == 1.5 and not control.steering
    speed = drive(control, speed, [0.05] * 60 * 20)  # the user steers again, steadily
    assert speed > 1.5 and control.steering
