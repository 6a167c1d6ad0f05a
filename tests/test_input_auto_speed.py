import math
import random

import pytest

from dasher_rnn.input.auto_speed import AutoSpeedControl

DT = 1 / 60


def drive(control: AutoSpeedControl, speed: float, angles, radius=1.0):
    for a in angles:
        speed = control.update(speed, radius * math.cos(a), radius * math.sin(a), DT)
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
    assert control.update(50.0, 1.0, 0.0, DT) <= 3.0


def test_no_change_while_reversing_or_on_bad_input():
    control = AutoSpeedControl()
    drive(control, 1.0, [0.0] * 60 * 5)  # a full window of steady angles
    assert control.update(1.0, -0.5, 0.1, DT) == 1.0
    assert control.update(1.0, 0.0, 0.5, DT) == 1.0
    assert control.update(1.0, 1.0, 0.0, 0.0) == 1.0
    assert control.update(1.0, float("nan"), 0.0, DT) == 1.0


def test_needs_some_history_before_adapting():
    control = AutoSpeedControl(window=2.0)
    assert drive(control, 1.0, [0.0] * 30) == 1.0  # half a second of data
