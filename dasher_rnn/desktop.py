"""``dasher-rnn install-desktop``: the app in the desktop's menu, as the freedesktop.org conventions want it.

Writes a desktop entry (Desktop Entry Specification, version 1.4 keys) to ``$XDG_DATA_HOME/applications`` and the icon into
the user's hicolor theme (Icon Theme Specification: scalable SVG, and the 48x48 PNG every desktop can show),
``$XDG_DATA_HOME`` being ``~/.local/share`` unless set. ``--uninstall`` removes those files again. Nothing
needs root; menus notice the new entry by themselves.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from dasher_rnn.paths import ASSETS_DIR

APP_ID = "dasher-rnn"  # the entry's file name, the icon name and the window's WM_CLASS (Qt's application name)
ICONS_DIR = ASSETS_DIR / "icons"
# (file in ICONS_DIR, folder of the hicolor theme)
ICON_FILES = ((f"{APP_ID}.svg", "scalable/apps"), (f"{APP_ID}-48.png", "48x48/apps"), (f"{APP_ID}-256.png", "256x256/apps"))


@dataclass
class DesktopFiles:
    entry: Path
    icons: list[Path]


def data_home() -> Path:
    """The user's XDG data folder ($XDG_DATA_HOME, else ~/.local/share)."""
    return Path(platformdirs.user_data_dir())


def desktop_files(home: Path | None = None) -> DesktopFiles:
    home = data_home() if home is None else home
    theme = home / "icons" / "hicolor"
    return DesktopFiles(home / "applications" / f"{APP_ID}.desktop",
                        [theme / folder / f"{APP_ID}{Path(name).suffix}" for name, folder in ICON_FILES])


def launcher() -> list[str]:
    """The command starting this installation's app: its ``dasher-rnn`` script, else ``python -m dasher_rnn``."""
    beside = Path(sys.executable).parent / ("dasher-rnn.exe" if os.name == "nt" else "dasher-rnn")
    if beside.is_file():
        return [str(beside.absolute())]
    found = shutil.which("dasher-rnn")
    return [str(Path(found).absolute())] if found else [str(Path(sys.executable).absolute()), "-m", "dasher_rnn"]


def _exec_argument(arg: str) -> str:
    """One argument of the Exec key: quoted when it has reserved characters, escaped inside the quotes."""
    if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`'):
        quoted = arg
    else:
        quoted = '"' + "".join("\\" + c if c in '"`$\\' else c for c in arg) + '"'
    # then the key file's own escaping of the string value, and the field-code escape of %
    return quoted.replace("\\", "\\\\").replace("%", "%%")


def desktop_entry(command: list[str]) -> str:
    """The text of the desktop entry starting ``command``."""
    exec_line = " ".join(_exec_argument(a) for a in [*command, "app"])
    try_exec = command[0].replace("\\", "\\\\")
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",  # what the keys here need; desktop-file-utils < 0.27 rejects 1.5
        "Name=Dasher RNN",
        "GenericName=Zooming text entry",
        "Comment=Write by steering a pointer, an eye tracker or a head mouse into zooming letters",
        f"Exec={exec_line}",
        f"TryExec={try_exec}",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=Utility;Accessibility;",
        "Keywords=Dasher;AAC;eye tracking;gaze;head mouse;text entry;writing;accessibility;",
        "StartupNotify=true",
        f"StartupWMClass={APP_ID}",
        "",
    ])


def install(home: Path | None = None, command: list[str] | None = None) -> DesktopFiles:
    """Write the desktop entry and the icons; the files written."""
    files = desktop_files(home)
    files.entry.parent.mkdir(parents=True, exist_ok=True)
    files.entry.write_text(desktop_entry(command or launcher()), encoding="utf-8")
    for (name, _), target in zip(ICON_FILES, files.icons, strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ICONS_DIR / name, target)
    files.icons[0].parent.parent.parent.touch()  # the theme folder's time: icon caches look again (the spec's advice)
    return files


def uninstall(home: Path | None = None) -> list[Path]:
    """Remove what ``install`` wrote; the files removed."""
    files = desktop_files(home)
    removed = []
    for path in [files.entry, *files.icons]:
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("install-desktop", help="add the app to the desktop's menu (Linux: a desktop entry and an icon "
                                               "in $XDG_DATA_HOME, default ~/.local/share)")
    p.add_argument("--uninstall", action="store_true", help="remove the desktop entry and the icon again")
    p.set_defaults(func=_cmd_install_desktop)


def _cmd_install_desktop(args: argparse.Namespace) -> int:
    if sys.platform in ("win32", "darwin"):
        print("dasher-rnn install-desktop: desktop entries are for Linux and BSD desktops (freedesktop.org)",
              file=sys.stderr)
        return 2
    if args.uninstall:
        removed = uninstall()
        for path in removed:
            print(f"removed {path}")
        if not removed:
            print(f"nothing to remove in {data_home()}")
        return 0
    files = install()
    print(f"wrote {files.entry}")
    for path in files.icons:
        print(f"wrote {path}")
    return 0
