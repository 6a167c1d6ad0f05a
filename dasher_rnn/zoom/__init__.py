"""Dasher's zooming interface without any toolkit: geometry, dynamics, sources and a simulated user."""
