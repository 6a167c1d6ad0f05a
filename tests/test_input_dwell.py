import pytest

from dasher_rnn.input.dwell import DwellDetector


def feed(d: DwellDetector, points, start=0.0, step=0.1):
    return [d.update(x, y, start + i * step) for i, (x, y) in enumerate(points)]


def test_fires_once_after_staying_inside():
    d = DwellDetector(radius=0.1, seconds=1.0, centre=(0.5, 0.5))
    fired = feed(d, [(0.52, 0.49)] * 30)
    assert fired.count(True) == 1
    assert fired.index(True) == 10  # t = 1.0 s after entering at t = 0


def test_rearms_only_after_leaving():
    d = DwellDetector(radius=0.1, seconds=0.5, centre=(0.0, 0.0))
    assert feed(d, [(0.0, 0.0)] * 6).count(True) == 1
    assert feed(d, [(0.0, 0.0)] * 20, start=0.6).count(True) == 0
    assert d.update(0.5, 0.0, 2.7) is False  # leaves
    assert feed(d, [(0.05, 0.0)] * 6, start=2.8).count(True) == 1


def test_leaving_early_restarts_the_timer():
    d = DwellDetector(radius=0.1, seconds=1.0)
    points = [(0.0, 0.0)] * 8 + [(1.0, 1.0)] + [(0.0, 0.0)] * 8
    assert not any(feed(d, points))
    assert d.progress == pytest.approx(0.7)


def test_bad_input_is_ignored_and_bad_settings_rejected():
    d = DwellDetector(radius=0.1, seconds=0.2)
    assert d.update(float("nan"), 0.0, 0.0) is False
    assert feed(d, [(0.0, 0.0)] * 4).count(True) == 1
    with pytest.raises(ValueError):
        DwellDetector(radius=0.0, seconds=1.0)


def test_rearm_starts_the_next_dwell_at_once_instead_of_waiting_for_a_look_away():
    d = DwellDetector(radius=10.0, seconds=1.0, rearm=True)
    fired = [t / 10 for t in range(36) if d.update(0.0, 0.0, t / 10)]
    assert fired == [1.0, 2.0, 3.0]  # the ring fills again while the pointer stays
    once = DwellDetector(radius=10.0, seconds=1.0)
    assert [t / 10 for t in range(36) if once.update(0.0, 0.0, t / 10)] == [1.0]
