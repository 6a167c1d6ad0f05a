"""`dasher-rnn install-desktop`: a desktop entry and icons in the user's XDG data folder, and --uninstall."""

from __future__ import annotations

import configparser
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dasher_rnn.desktop import ICONS_DIR, desktop_entry

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="freedesktop.org desktops only")


def _cli(args: list[str], data_home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, XDG_DATA_HOME=str(data_home))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run([sys.executable, "-m", "dasher_rnn", *args], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_install_desktop_writes_entry_and_icons_then_uninstall_removes_them(tmp_path):
    data_home = tmp_path / "data"
    done = _cli(["install-desktop"], data_home)
    entry = data_home / "applications" / "dasher-rnn.desktop"
    svg = data_home / "icons" / "hicolor" / "scalable" / "apps" / "dasher-rnn.svg"
    png48 = data_home / "icons" / "hicolor" / "48x48" / "apps" / "dasher-rnn.png"
    png256 = data_home / "icons" / "hicolor" / "256x256" / "apps" / "dasher-rnn.png"
    for path in (entry, svg, png48, png256):
        assert f"wrote {path}" in done.stdout
        assert path.is_file()

    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(entry, encoding="utf-8")
    section = parser["Desktop Entry"]
    assert section["Type"] == "Application" and section["Name"] == "Dasher RNN"
    assert section["Icon"] == "dasher-rnn" == svg.stem == png48.stem
    assert section["Terminal"] == "false"
    assert "Accessibility" in section["Categories"].split(";")
    command = section["Exec"].split()
    assert command[-1] == "app"
    assert Path(section["TryExec"]).is_file() and os.access(section["TryExec"], os.X_OK)

    assert svg.read_bytes() == (ICONS_DIR / "dasher-rnn.svg").read_bytes()
    assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert _png_size(png48) == (48, 48) and _png_size(png256) == (256, 256)

    validate = shutil.which("desktop-file-validate")
    if validate:
        checked = subprocess.run([validate, str(entry)], capture_output=True, text=True)
        assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout + checked.stderr

    done = _cli(["install-desktop", "--uninstall"], data_home)
    for path in (entry, svg, png48, png256):
        assert f"removed {path}" in done.stdout
        assert not path.exists()
    assert "nothing to remove" in _cli(["install-desktop", "--uninstall"], data_home).stdout


def test_exec_key_quotes_and_escapes_an_awkward_path():
    text = desktop_entry(["/home/a b/my$env/x%y/bin/dasher-rnn"])
    lines = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    # quoted for the space, $ escaped inside the quotes (a backslash, doubled by the string escaping), % doubled
    assert lines["Exec"] == '"/home/a b/my\\\\$env/x%%y/bin/dasher-rnn" app'
    assert lines["TryExec"] == "/home/a b/my$env/x%y/bin/dasher-rnn"
    assert desktop_entry(["/opt/venv/bin/dasher-rnn"]).count("Exec=/opt/venv/bin/dasher-rnn app\n") == 1
