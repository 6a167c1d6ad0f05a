"""Smoke test of the self-contained build (`make bundle-test`): the bundle runs as a person without Python runs it.

    python3 packaging/smoke_test.py [dist/dasher-rnn] [--screenshot docs/bundle-window.png]

Every command runs from a clean environment: ``env -i`` with a throwaway HOME and no PATH to any Python, from a
folder outside the checkout. It checks ``--version``, ``languages --json``, ``eval`` and ``simulate`` on two
phrases (the shipped English model, learning as it goes), ``serve`` answering ``/v1/health`` and ``/v1/predict``,
``install-desktop`` (its menu entry starts the bundle's program), and the window: under Xvfb (with openbox where
installed) ``app --exit-after-first-frame`` paints its first boxes of predictions and exits 0, and the process maps
no Python library from outside the bundle; ``--screenshot`` also opens the window as a user does (the tutorial of a
first start) and saves a picture of the screen.
Prints one JSON line of what it saw; exits 1 on the first failure. Needs only the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PHRASES = "i need a drink of water\nthank you very much\n"


class SmokeFailure(Exception):
    pass


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """What ``env -i`` leaves, plus a home of its own: no PATH to a Python, no PYTHON* variables."""
    return {"HOME": str(home), "PATH": "/nonexistent", "LANG": "C.UTF-8", **extra}


def run(program: Path, args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> str:
    done = subprocess.run([str(program), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SmokeFailure(f"`dasher-rnn {' '.join(args)}` exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def check_serve(program: Path, env: dict[str, str], cwd: Path) -> dict:
    port = free_port()
    proc = subprocess.Popen([str(program), "serve", "--port", str(port)], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                health = http(f"http://127.0.0.1:{port}/v1/health")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SmokeFailure(f"serve did not answer (exit {proc.poll()}): "
                                       f"{proc.stderr.read()[-2000:] if proc.poll() is not None else ''}") from None
                time.sleep(0.2)
        symbols = http(f"http://127.0.0.1:{port}/v1/model")["alphabet"]["symbols"]
        log_probs = http(f"http://127.0.0.1:{port}/v1/predict", {"contexts": ["thank yo"]})["distributions"][0]
        best = symbols[max(range(len(symbols)), key=log_probs.__getitem__)]
        if best != "u":
            raise SmokeFailure(f"serve predicts {best!r} after 'thank yo'")
        return {"health": health.get("status"), "best_after_thank_yo": best}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def foreign_python_libraries(pid: int, bundle: Path) -> list[str]:
    """Python libraries (libpython, extension modules) the process maps from outside the bundle."""
    mapped = {line.split(None, 5)[-1].strip() for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
              if len(line.split(None, 5)) == 6}
    return sorted(path for path in mapped if ("libpython" in path or path.endswith(".so") and "python" in path)
                  and not path.startswith(str(bundle.resolve())))


class Display:
    """Xvfb on a free display number, and openbox on it where installed (a window manager, as a desktop has)."""

    def __init__(self) -> None:
        self.name = f":{free_port() % 400 + 100}"
        self.procs = [subprocess.Popen(["Xvfb", self.name, "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.monotonic() + 20
        while not Path(f"/tmp/.X11-unix/X{self.name[1:]}").exists():
            if time.monotonic() > deadline or self.procs[0].poll() is not None:
                raise SmokeFailure(f"Xvfb did not start on {self.name}")
            time.sleep(0.1)
        if shutil.which("openbox"):
            self.procs.append(subprocess.Popen(["openbox"], env=dict(os.environ, DISPLAY=self.name),
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(0.5)

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            proc.wait(timeout=10)


def check_window(program: Path, bundle: Path, env: dict[str, str], cwd: Path, screenshot: Path | None) -> dict:
    display = Display()
    try:
        env = dict(env, DISPLAY=display.name)
        start = time.monotonic()
        proc = subprocess.Popen([str(program), "app", "--exit-after-first-frame"], env=env, cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        first_frame_s = time.monotonic() - start
        try:  # while it closes the window
            foreign: list[str] | None = foreign_python_libraries(proc.pid, bundle)
        except OSError:  # already gone
            foreign = None
        _, err = proc.communicate(timeout=60)
        if line != "first frame" or proc.returncode != 0:
            raise SmokeFailure(f"the window painted no frame (exit {proc.returncode}, said {line!r}): {err[-2000:]}")
        if foreign:
            raise SmokeFailure(f"the bundle loaded Python from outside itself: {foreign}")
        seen = {"first_frame_s": round(first_frame_s, 2), "display": display.name,
                "window_manager": len(display.procs) > 1, "python_only_from_bundle": foreign == [] or "not checked"}
        if screenshot is not None:
            seen["screenshot"] = str(take_screenshot(program, env, cwd, display.name, screenshot))
        return seen
    finally:
        display.close()


def take_screenshot(program: Path, env: dict[str, str], cwd: Path, display: str, path: Path) -> Path:
    """Open the window as a person does (a first start: the tutorial), picture the screen, close it politely."""
    proc = subprocess.Popen([str(program)], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        x = dict(os.environ, DISPLAY=display)
        subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "dasher-rnn"], env=x,
                       capture_output=True, timeout=120, check=True)
        time.sleep(3)  # the model loaded and the first frames painted
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["import", "-window", "root", str(path)], env=x, check=True, timeout=60)
    finally:
        proc.terminate()  # SIGTERM closes the window as the user's close does (settings and profile saved)
        _, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        raise SmokeFailure(f"the app exited {proc.returncode} on SIGTERM: {err[-2000:]}")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", default="dist/dasher-rnn", help="the bundle's folder")
    parser.add_argument("--screenshot", type=Path, default=None, help="also save a picture of the open window")
    args = parser.parse_args()
    bundle = Path(args.bundle).resolve()
    program = bundle / "dasher-rnn"
    screenshot = args.screenshot.resolve() if args.screenshot else None
    report: dict = {"bundle": str(bundle)}
    try:
        with tempfile.TemporaryDirectory(prefix="dasher-rnn-smoke-") as tmp:
            home = Path(tmp)
            (home / "phrases.txt").write_text(PHRASES, encoding="utf-8")
            env = clean_env(home)
            report["version"] = run(program, ["--version"], env, home).strip()
            languages = json.loads(run(program, ["languages", "--json"], env, home))
            report["languages"] = len(languages)
            line = next(line for line in run(program, ["eval", "--model", "hybrid", "phrases.txt"], env, home)
                        .splitlines() if line.startswith("overall"))
            report["eval_bits_per_char"] = float(line.split()[1])
            simulated = json.loads(run(program, ["simulate", "--file", "phrases.txt", "--json", "--no-progress"],
                                       env, home))
            if simulated["failed"]:
                raise SmokeFailure(f"simulate failed phrases: {simulated['failed_phrases']}")
            report["simulate_chars_per_minute"] = simulated["chars_per_minute"]
            report["serve"] = check_serve(program, env, home)
            run(program, ["install-desktop"], env, home)
            entry = (home / ".local/share/applications/dasher-rnn.desktop").read_text(encoding="utf-8")
            if f"Exec={program}" not in entry:
                raise SmokeFailure(f"the desktop entry does not start the bundle: {entry!r}")
            report["desktop_entry"] = "starts the bundle"
            if shutil.which("Xvfb") is None:
                report["window"] = "skipped: no Xvfb (make test-system installs it)"
            else:
                report["window"] = check_window(program, bundle, env, home, screenshot)
    except (SmokeFailure, subprocess.SubprocessError, OSError, ValueError, KeyError) as exc:
        print(json.dumps(report), file=sys.stderr)
        print(f"bundle smoke test failed: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
