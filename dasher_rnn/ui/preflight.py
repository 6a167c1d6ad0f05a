"""Before the window opens: is there a display, and are the system libraries Qt's X11 plugin needs installed?

Without them Qt aborts (exit 134, a core dump) with advice that names one library at most. This module says
what is missing in one line, with the one ``apt-get install`` command that installs it. It uses only the
standard library, so ``make run`` runs it with the system Python before anything is installed
(``python3 -m dasher_rnn.ui.preflight``), and ``dasher-rnn app`` runs it before importing Qt.

``make run``'s check also says, in one line, when nothing on the system can read the text aloud, with the one
command that adds a voice (``ui/speech.py``); that is a note, not a failure: writing works without speech.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import socket
import sys
from collections.abc import Iterable, Mapping

# What PySide6's xcb platform plugin (PySide6/Qt/plugins/platforms/libqxcb.so) loads, as `ldd` lists it, less
# the C library's own files, with the Debian/Ubuntu package of each. tests/test_preflight.py compares it with
# `ldd` on the installed plugin. A fresh Debian desktop typically lacks the first three.
XCB_LIBRARIES: dict[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libXau.so.6": "libxau6",
    "libXdmcp.so.6": "libxdmcp6",
    "libGL.so.1": "libgl1",
    "libGLX.so.0": "libglx0",
    "libGLdispatch.so.0": "libglvnd0",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libpng16.so.16": "libpng16-16",
    "libbrotlidec.so.1": "libbrotli1",
    "libbrotlicommon.so.1": "libbrotli1",
    "libexpat.so.1": "libexpat1",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libpcre2-8.so.0": "libpcre2-8-0",
    "libdbus-1.so.3": "libdbus-1-3",
    "libsystemd.so.0": "libsystemd0",
    "libcap.so.2": "libcap2",
    "libgcrypt.so.20": "libgcrypt20",
    "libgpg-error.so.0": "libgpg-error0",
    "liblz4.so.1": "liblz4-1",
    "liblzma.so.5": "liblzma5",
    "libzstd.so.1": "libzstd1",
    "libz.so.1": "zlib1g",
    "libbsd.so.0": "libbsd0",
    "libmd.so.0": "libmd0",
    "libstdc++.so.6": "libstdc++6",
    "libgcc_s.so.1": "libgcc-s1",
}

# Platforms that need no display server (Qt's -platform names)
_HEADLESS = {"offscreen", "minimal", "minimalegl", "vnc", "eglfs", "linuxfb", "vkkhrdisplay"}


def missing_libraries(sonames: Iterable[str] = XCB_LIBRARIES) -> list[str]:
    """The shared libraries among ``sonames`` that the dynamic loader cannot load (itself, or one it needs)."""
    missing = []
    for name in sonames:
        try:
            ctypes.CDLL(name)
        except OSError:
            missing.append(name)
    return missing


def install_command(missing: Iterable[str]) -> str:
    """The one command installing ``missing`` libraries: apt-get where there is apt, else what to look for."""
    missing = list(missing)
    if shutil.which("apt-get") is None:
        return "install the packages of your distribution that provide " + ", ".join(missing)
    packages = sorted({XCB_LIBRARIES.get(name, name) for name in missing})
    sudo = "sudo " if hasattr(os, "geteuid") and os.geteuid() != 0 else ""
    return f"{sudo}apt-get install {' '.join(packages)}"


def _requested_platforms(environ: Mapping[str, str]) -> list[str]:
    """QT_QPA_PLATFORM's platform names ("wayland;xcb" is a list to try, "vnc:size=800x600" has options)."""
    return [p.split(":")[0].strip() for p in environ.get("QT_QPA_PLATFORM", "").split(";") if p.strip()]


def _x_display_reachable(display: str) -> bool:
    """Whether an X server listens for ``display`` ("[host]:n[.screen]"); True when that cannot be told."""
    found = re.fullmatch(r"(?:[a-z]+/)?(?P<host>[^:]*):(?P<n>\d+)(?:\.\d+)?", display)
    if found is None:
        return True  # a form we do not know (e.g. a launchd socket path on macOS): let Qt try
    host, n = found["host"], int(found["n"])
    try:
        if host in ("", "unix"):
            if not hasattr(socket, "AF_UNIX"):
                return True
            for address in (f"\0/tmp/.X11-unix/X{n}", f"/tmp/.X11-unix/X{n}"):  # Linux's abstract socket, then the file
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    try:
                        sock.connect(address)
                        return True
                    except OSError:
                        continue
            return False
        with socket.create_connection((host, 6000 + n), timeout=2):
            return True
    except OSError:
        return False
    except Exception:  # never stop the app because the check itself failed
        return True


def display_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the window cannot open on this machine's display, or None (also on Windows and macOS: not checked)."""
    environ = os.environ if environ is None else environ
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return None
    requested = _requested_platforms(environ)
    if requested and any(p in _HEADLESS for p in requested):
        return None
    wants_x = not requested or "xcb" in requested
    wants_wayland = not requested or any(p.startswith("wayland") for p in requested)
    if wants_wayland and environ.get("WAYLAND_DISPLAY"):
        return None
    display = environ.get("DISPLAY", "")
    if wants_x and display:
        if _x_display_reachable(display):
            return None
        return f"cannot reach the X display {display!r} (DISPLAY): is the X server running, or is DISPLAY left " \
               "from an earlier session?"
    return "no display to open the window on: DISPLAY and WAYLAND_DISPLAY are unset (start dasher-rnn in a " \
           "desktop session, or over ssh -X)"


def uses_x11(environ: Mapping[str, str] | None = None) -> bool:
    """Whether Qt will use its X11 (xcb) plugin: on Linux and the BSDs, unless another platform is chosen."""
    environ = os.environ if environ is None else environ
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return False
    requested = _requested_platforms(environ)
    if requested:
        return requested[0] == "xcb"
    return not (environ.get("WAYLAND_DISPLAY") and environ.get("XDG_SESSION_TYPE") == "wayland")


def libraries_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """The X11 plugin's missing system libraries and the command installing them, or None."""
    if not uses_x11(environ):
        return None
    missing = missing_libraries()
    if not missing:
        return None
    return f"Qt's X11 plugin needs system libraries missing here ({', '.join(missing)}); install them with: " \
           f"{install_command(missing)}"


def app_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """The first reason the window cannot open (no display, then missing libraries) as one line, or None."""
    return display_problem(environ) or libraries_problem(environ)


def speech_problem() -> str | None:
    """Why Speak will have no voice here, with the one command that adds one, or None: the system's speech programs
    (``ui/speech.py``'s, found as the app finds them; Qt's text to speech is not part of the light install)."""
    from dasher_rnn.ui.speech import Speaker  # the standard library only, as this module

    speaker = Speaker(use_qt=False)
    if speaker.available:
        return None
    return f"{speaker.reason} (optional: writing works without it)"


def main() -> int:
    """``make run``'s check: every problem on its own line; exit status 1 when there is one. No voice to speak
    with is said the same way but is not a failure."""
    problems = [p for p in (display_problem(), libraries_problem()) if p]
    for line in [*problems, speech_problem()]:
        if line:
            print(f"dasher-rnn: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
