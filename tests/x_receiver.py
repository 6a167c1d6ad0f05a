"""A separate X program for the direct-output tests: a text field that takes the keyboard focus and writes what
it holds to a file after every change.

    DISPLAY=:N python tests/x_receiver.py OUT_FILE

The file first holds READY (once the window is shown and focused), then the field's text after each change. The
window id (decimal) is written to OUT_FILE.id, so a test can give it the focus again.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

READY = "\x00READY\x00"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader never sees half a file


def main() -> int:
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QPlainTextEdit

    out = Path(sys.argv[1])
    app = QApplication(sys.argv[:1])
    field = QPlainTextEdit()
    field.setWindowTitle("x_receiver")
    field.textChanged.connect(lambda: _write(out, field.toPlainText()))
    field.resize(400, 200)
    field.move(600, 0)  # beside the writing window, not under it
    field.show()
    field.activateWindow()
    field.setFocus()
    signal.signal(signal.SIGTERM, lambda *_: app.quit())

    def ready() -> None:
        _write(out.with_name(out.name + ".id"), str(int(field.winId())))
        _write(out, READY)

    QTimer.singleShot(200, ready)
    timer = QTimer()
    timer.start(100)  # lets Python run the SIGTERM handler
    timer.timeout.connect(lambda: None)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
