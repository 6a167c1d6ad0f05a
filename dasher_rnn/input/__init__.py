"""Pointer input: gaze sources (UDP bridge, Tobii), smoothing, dwell, automatic speed and device presets. Qt-free."""
