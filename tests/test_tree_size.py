"""The tracked tree stays small enough to travel: a GPU job (tools/gpu_run.py) runs in a copy of this repository's
working tree, 64 MiB in all, and the training text it learns from must fit in what the tree leaves
(docs/history/gpu-runbook.md, "The budget"). The guard is 48 MiB, so that about 16 MiB stay for the shard."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TREE_GUARD = 48 * 2**20  # bytes of tracked files; the device call sends at most 64 MiB (tools/gpu_run.py TREE_LIMIT)


def tracked_sizes(root: Path) -> dict[str, int]:
    """Every file git tracks in ``root`` with its size in the working tree (what a device call sends); files deleted
    from the working tree are left out."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout.split(b"\0")
    sizes = {}
    for name in (n.decode() for n in listed if n):
        path = root / name
        if path.is_symlink() or path.is_file():
            sizes[name] = path.lstat().st_size
    return sizes


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_the_tracked_tree_leaves_room_for_the_gpu_jobs_training_text():
    sizes = tracked_sizes(REPO)
    total = sum(sizes.values())
    largest = ", ".join(f"{name} {size / 2**20:.2f} MiB" for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
    assert total <= TREE_GUARD, (
        f"the tracked tree is {total:,} bytes ({total / 2**20:.2f} MiB), over the {TREE_GUARD / 2**20:.0f} MiB guard: "
        "a GPU job's device call sends the working tree, 64 MiB in all, and its training text must fit in what is left "
        "(docs/history/gpu-runbook.md, `python tools/gpu_run.py budget`). Keep large files out of git (runs/ is "
        f"ignored; the shipped models carry only their int8 ONNX export). Largest: {largest}")
