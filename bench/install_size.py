"""What installing dasher-rnn costs: the wheel's size, what pip downloads, the installed size and the install time
into a fresh virtual environment, for the base install (no PyTorch) and with the `train` extra. Prints JSON.

    python bench/install_size.py [--runs 3] [--wheelhouse DIR] [--no-torch-variant]

1. The two distributions of this checkout (``clients/python``'s dasher-rnn-client and dasher-rnn) are built as wheels
   from copies of their sources (``pip wheel --no-deps --no-build-isolation``: no network, nothing left in the
   checkout).
2. ``pip download`` puts every dependency's wheel into a wheelhouse (``--wheelhouse``, kept between runs; a temporary
   folder otherwise), under constraints.txt, from wherever this machine's pip takes packages (its index, find-links
   and cache: the JSON says which files it fetched and their sizes, which is what a user downloads; its time is this
   machine's network and cache, not a user's, and is reported as such).
3. For each run and variant, a fresh environment (``python -m venv --without-pip``) gets the wheels with
   ``pip --python VENV install --no-index --find-links WHEELHOUSE``: the install time without the download. The
   installed size is every file under the environment's site-packages.

With torch, the extra's torch is the one constraints.txt pins, which resolves on the development and CI machines to
a CPU-only wheel in a local folder; plain pip on Linux would take PyPI's CUDA build (hundreds of MB more, and its
NVIDIA libraries), which this script does not download.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLIENT = REPO / "clients" / "python"


def run(cmd: list[str | Path], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise RuntimeError(f"{cmd} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def build_wheels(out: Path, tmp: Path) -> tuple[Path, Path]:
    """(dasher-rnn's wheel, the client's wheel), built from copies of their sources."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "dasher_rnn", src / "dasher_rnn", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    client = shutil.copytree(CLIENT, tmp / "client", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build",
                                                                                     "*.egg-info", ".pytest_cache"))
    for source in (src, client):
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir", "-q",
             "-w", out, source], cwd=source)
    return next(out.glob("dasher_rnn-*.whl")), next(out.glob("dasher_rnn_client-*.whl"))


def requirements(wheel: Path, client: Path, torch: bool) -> list[str]:
    return [str(client), f"{wheel}[train]" if torch else str(wheel)]


def download(wheelhouse: Path, reqs: list[str]) -> dict:
    """Every dependency's wheel into the wheelhouse; what was fetched now (files and bytes), and the time taken."""
    before = {p.name for p in wheelhouse.iterdir()}
    t0 = time.perf_counter()
    run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-c", REPO / "constraints.txt",
         "-d", wheelhouse, *reqs])
    seconds = time.perf_counter() - t0
    fetched = sorted(p for p in wheelhouse.iterdir() if p.name not in before)
    return {"files_fetched": len(fetched), "megabytes_fetched": round(sum(p.stat().st_size for p in fetched) / 1e6, 1),
            "seconds": round(seconds, 1)}


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def install_once(tmp: Path, wheelhouse: Path, reqs: list[str]) -> dict:
    venv = tmp / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    t0 = time.perf_counter()
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    t1 = time.perf_counter()
    run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", "--no-index",
         "--find-links", wheelhouse, "-c", REPO / "constraints.txt", *reqs])
    t2 = time.perf_counter()
    # from the temporary folder: the checkout's dasher_rnn (and its egg-info) must not be on the path
    packages = run([venv / "bin" / "python", "-c", "import importlib.metadata as m; "
                    "print('\\n'.join(sorted(d.metadata['Name'] for d in m.distributions())))"], cwd=tmp).stdout.split()
    torch = run([venv / "bin" / "python", "-c", "import importlib.util; print(importlib.util.find_spec('torch') "
                 "is not None)"], cwd=tmp).stdout.strip() == "True"
    site = site_packages(venv)
    entries = {p.name: size_of(p) if p.is_dir() else p.stat().st_size for p in site.iterdir()}
    largest = sorted(entries, key=entries.__getitem__, reverse=True)[:8]
    return {"venv_seconds": round(t1 - t0, 2), "install_seconds": round(t2 - t1, 2),
            "installed_megabytes": round(size_of(site) / 1e6, 1), "distributions": len(packages),
            "torch_installed": torch, "packages": packages,
            "largest_installed_megabytes": {name: round(entries[name] / 1e6, 1) for name in largest}}


def wheels_used(wheelhouse: Path, packages: list[str]) -> dict:
    """The wheels of ``packages`` in the wheelhouse: what a user downloads for this install."""
    def key(name: str) -> str:
        return name.lower().replace("-", "_").replace(".", "_")

    wanted = {key(n) for n in packages}
    files = [p for p in wheelhouse.glob("*.whl") if key(p.name.split("-")[0]) in wanted]
    biggest = sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:6]
    return {"wheels": len(files), "megabytes": round(sum(p.stat().st_size for p in files) / 1e6, 1),
            "largest": {p.name: round(p.stat().st_size / 1e6, 1) for p in biggest}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wheelhouse", type=Path, default=None, help="keep the downloaded wheels here")
    parser.add_argument("--no-torch-variant", action="store_true", help="measure the base install only")
    args = parser.parse_args()
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    variants = {"base": False} if args.no_torch_variant else {"base": False, "with_train_extra": True}
    report: dict = {"what": "the wheel, the download, the installed size and the install time into a fresh venv"}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        wheelhouse = args.wheelhouse or tmp / "wheelhouse"
        wheelhouse.mkdir(parents=True, exist_ok=True)
        wheel, client = build_wheels(tmp / "dist", tmp)
        report["wheel"] = {"file": wheel.name, "megabytes": round(wheel.stat().st_size / 1e6, 2),
                           "client_file": client.name, "client_kilobytes": round(client.stat().st_size / 1e3, 1)}
        for name, torch in variants.items():
            reqs = requirements(wheel, client, torch)
            fetched = download(wheelhouse, reqs)
            runs = [install_once(tmp, wheelhouse, reqs) for _ in range(args.runs)]
            packages = runs[0].pop("packages")
            largest = runs[0].pop("largest_installed_megabytes")
            for r in runs[1:]:
                r.pop("packages")
                r.pop("largest_installed_megabytes")
            report[name] = {
                "command": "pip install " + " ".join(Path(r).name for r in reqs),
                "download": {**wheels_used(wheelhouse, packages),
                             "fetched_by_this_run": fetched},
                "runs": runs,
                "median_install_seconds": round(statistics.median(r["install_seconds"] for r in runs), 2),
                "installed_megabytes": runs[0]["installed_megabytes"],
                "largest_installed_megabytes": largest,
                "distributions": runs[0]["distributions"],
                "torch_installed": runs[0]["torch_installed"],
                "packages": packages,
            }
    report.update({"load_average_before": [round(x, 2) for x in load_before] if load_before else None,
                   "cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()})
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
