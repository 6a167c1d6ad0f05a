"""The checks before the window opens: a display, the system libraries Qt's X11 plugin needs, and a voice to speak
with (a note with the command that adds one, never a failure)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dasher_rnn.ui import preflight

REPO = Path(__file__).resolve().parent.parent
C_LIBRARY = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "linux-vdso.so.1"}


def _without_display(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(extra)
    return env


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 and Wayland displays are Linux's")
@pytest.mark.parametrize("display", [None, ":97"])
def test_app_without_a_display_exits_with_one_line_not_a_core_dump(tmp_path, display):
    env = _without_display(DASHER_RNN_PROFILES=str(tmp_path / "profiles"), **({"DISPLAY": display} if display else {}))
    done = subprocess.run([sys.executable, "-m", "dasher_rnn", "app", "--settings", str(tmp_path / "settings.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1  # Qt's abort would be -6 (134 from a shell)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    if display is None:
        assert "no display" in lines[0] and "DISPLAY and WAYLAND_DISPLAY are unset" in lines[0]
    else:
        assert "cannot reach the X display ':97'" in lines[0]
    assert not (tmp_path / "settings.json").exists()  # it stopped before loading anything


def test_display_problem_follows_the_platform_asked_for():
    linux = sys.platform.startswith("linux")
    assert (preflight.display_problem({}) is not None) == linux
    assert preflight.display_problem({"QT_QPA_PLATFORM": "offscreen"}) is None
    assert preflight.display_problem({"QT_QPA_PLATFORM": "vnc:size=800x600"}) is None
    assert preflight.display_problem({"WAYLAND_DISPLAY": "wayland-0"}) is None
    if linux:
        assert "unset" in preflight.display_problem({"QT_QPA_PLATFORM": "xcb", "WAYLAND_DISPLAY": "wayland-0"})
        assert "cannot reach" in preflight.display_problem({"DISPLAY": ":97"})


def test_missing_libraries_are_named_with_the_command_installing_them(monkeypatch):
    missing = preflight.missing_libraries(["libdasher-rnn-nonexistent.so.7", "libc.so.6"])
    assert missing == ["libdasher-rnn-nonexistent.so.7"]
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    command = preflight.install_command(["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-cursor.so.0"])
    assert re.fullmatch(r"(sudo )?apt-get install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1", command)
    monkeypatch.setattr(preflight, "missing_libraries", lambda *a: ["libxcb-icccm.so.4"])
    problem = preflight.libraries_problem({"DISPLAY": ":0", "QT_QPA_PLATFORM": "xcb"})
    assert "libxcb-icccm.so.4" in problem and problem.endswith("apt-get install libxcb-icccm4")
    assert preflight.libraries_problem({"QT_QPA_PLATFORM": "offscreen"}) is None


def test_the_library_list_covers_what_the_installed_xcb_plugin_loads():
    import PySide6

    plugin = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    if shutil.which("ldd") is None or not plugin.is_file():
        pytest.skip("no ldd or no xcb plugin on this platform")
    listed = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=True).stdout
    needed = set()
    for line in listed.splitlines():
        name, _, where = line.strip().partition(" => ")
        if not where or Path(PySide6.__file__).parent.as_posix() in where:
            continue  # the loader itself, or Qt's own libraries shipped inside PySide6
        needed.add(name)
    assert needed - C_LIBRARY <= set(preflight.XCB_LIBRARIES), sorted(needed - C_LIBRARY - set(preflight.XCB_LIBRARIES))


@pytest.mark.skipif(shutil.which("make") is None or not sys.platform.startswith("linux"), reason="needs make, Linux")
def test_make_run_checks_first_with_no_installed_package(tmp_path):
    # -S: no site-packages at all, as with the system Python of a fresh machine
    python = f"{sys.executable} -S"
    env = {k: v for k, v in _without_display().items() if k not in ("PYTHONPATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "-s", "check-system", f"PYTHON={python}"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert "dasher-rnn: no display to open the window on" in done.stderr
    dry_run = ["make", "-n", "--no-print-directory", "run", f"PYTHON={python}", f"VENV={tmp_path / 'venv'}"]
    planned = subprocess.run(dry_run, cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
                             check=True).stdout.splitlines()
    assert "-m dasher_rnn.ui.preflight" in planned[0]  # before the virtual environment is made
    assert any(" -m venv " in line for line in planned[1:])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the command named is Linux's")
def test_the_system_check_names_the_one_command_adding_a_voice_and_still_passes(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text("#!/bin/sh\nexit 1\n")  # Debian's package manager, never run
    (bin_dir / "apt-get").chmod(0o755)
    check = [sys.executable, "-S", "-m", "dasher_rnn.ui.preflight"]  # the system Python, nothing installed
    env = _without_display(QT_QPA_PLATFORM="offscreen", PATH=str(bin_dir))  # a display: only speech is missing
    done = subprocess.run(check, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    sudo = "" if os.geteuid() == 0 else "sudo "
    assert done.returncode == 0  # writing works without speech
    assert done.stderr.splitlines() == [f"dasher-rnn: No speech available: add a voice with {sudo}apt-get install "
                                        "espeak-ng (optional: writing works without it)"]

    without_display = subprocess.run(check, cwd=tmp_path, env=_without_display(PATH=str(bin_dir)), capture_output=True,
                                     text=True, timeout=60)
    assert without_display.returncode == 1
    assert [line.split(":")[1] for line in without_display.stderr.splitlines()] == [" no display to open the window on",
                                                                                   " No speech available"]

    (bin_dir / "espeak-ng").write_text("#!/bin/sh\nexit 0\n")  # what that command installs
    (bin_dir / "espeak-ng").chmod(0o755)
    done = subprocess.run(check, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
