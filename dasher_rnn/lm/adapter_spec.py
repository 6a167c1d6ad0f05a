"""What a state adapter is (``AdapterSpec``), without torch: adaptation settings and the backends name one, and
only the adapter itself (``lm/state_adapter.py::StateAdapter``) needs torch."""

from __future__ import annotations

from dataclasses import dataclass

ADAPTER_KINDS = ("sparse", "lhuc")


@dataclass(frozen=True)
class AdapterSpec:
    kind: str
    feed: bool = True
    units: int = 100  # sparse only: how many hidden units M mixes

    def __post_init__(self) -> None:
        if self.kind not in ADAPTER_KINDS:
            raise ValueError(f"unknown state adapter {self.kind!r} (choose from {', '.join(ADAPTER_KINDS)})")
        if self.units < 1:
            raise ValueError("a sparse adapter needs at least one unit")
