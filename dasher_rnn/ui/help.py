"""The Help page: what the boxes mean, steering with each input, starting and stopping, backing out, undo, the
control box, writing into other programs (direct output), speech, where the text, the profiles and the preferences
are kept, and the version with where to get help. Large Page up / Page down buttons scroll it, so it reads with a
pointer alone."""

from __future__ import annotations

import html
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path

from PySide6.QtWidgets import QAbstractSlider, QDialog, QHBoxLayout, QPushButton, QTextBrowser, QVBoxLayout, QWidget

import dasher_rnn
from dasher_rnn import __version__
from dasher_rnn.ui.widgets import DIALOG_STYLE


def support_link() -> str | None:
    """The project's own issue tracker (else its home page), from the installed package's ``[project.urls]``; None
    where it names neither."""
    try:
        urls = metadata("dasher-rnn").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    named = {label.strip().lower(): url.strip() for label, _, url in (u.partition(",") for u in urls) if url}
    return named.get("issues") or named.get("homepage")


def docs_folder() -> Path | None:
    """The docs/ folder beside the package where it runs from its source (a checkout, an editable install)."""
    folder = Path(dasher_rnn.__file__).resolve().parent.parent / "docs"
    return folder if (folder / "ARCHITECTURE.md").is_file() else None


def _support_html() -> str:
    link = support_link()
    if link is not None:
        url = html.escape(link, quote=True)
        return f"""<li>Questions and problems: <a href="{url}">{url}</a>. Say the version above and what you were
doing; never send your profile or your text unless you want to.</li>"""
    docs = docs_folder()
    where = f"<tt>{html.escape(str(docs.parent))}</tt>" if docs is not None else "dasher-rnn's source"
    return f"""<li><tt>README.md</tt> and the <tt>docs/</tt> folder in {where} explain every part of the app and
the commands; <tt>dasher-rnn --help</tt> lists the commands, and <tt>dasher-rnn COMMAND --help</tt> what each
takes.</li>"""


def help_html(documents: Path, journal: Path, profiles: Path, settings: Path) -> str:
    """The help text as HTML, naming this machine's folders."""
    d, j, p, s = (html.escape(str(x)) for x in (documents, journal, profiles, settings))
    return f"""
<h2>Writing by steering</h2>
<p>Every box on the right is a letter (or a space, or a punctuation mark). The more likely the letter comes
next, the taller its box. Steer the pointer towards the letter you want: the boxes zoom towards you, and when
the red crosshair is inside a box, its letter is written. Inside each box are the boxes of the letters that may
follow, so you write a word in one smooth movement. Pointing above or below the crosshair moves up or down;
pointing further right goes faster; pointing to the left of the crosshair zooms out.</p>
<p>Colours group the letters: lower case, capitals, digits and punctuation each have their own. A space is drawn
as &#9251;.</p>

<h2>Starting and stopping</h2>
<ul>
<li><b>Mouse or touchpad:</b> click the writing area (or press Space) to start, click again to stop.</li>
<li><b>Eye tracker, head mouse:</b> rest the pointer on the crosshair for a second or so to start; rest it
there again to stop.</li>
<li>With every input: the Start / Stop button on the toolbar; writing stops by itself when the pointer stays
still for a few seconds, and pauses while the pointer is off the writing area (Preferences, Stopping).</li>
<li>Eye tracker: a gaze resting while you read or think writes nothing. When the picture streams past a still
gaze, the zoom holds, takes back what it wrote since your gaze came to rest, and goes on when you look at a box
again; to stop, rest on the crosshair or choose Stop in the control box.</li>
</ul>

<h2>Steering with each input</h2>
<ul>
<li><b>Mouse:</b> move the pointer; no button needs holding.</li>
<li><b>Eye tracker (gaze over UDP, Tobii, Dasher socket):</b> look at the letter you want. Keep looking
at it rather than reading the other boxes; the speed stays fixed, and a slow speed (under 1 bit/s) helps at
first.</li>
<li><b>Head mouse:</b> it moves the mouse pointer; choose the Head mouse preset.</li>
</ul>

<h2>Mistakes</h2>
<ul>
<li><b>Backing out:</b> point to the left of the crosshair: the view zooms out and the last letters are
deleted, then steer into the right letter.</li>
<li><b>Undo writing</b> (the large button) takes back the whole last run of writing since you started, and
what it taught the model. Each press goes one run further back.</li>
<li><b>New message</b> finishes this message; <b>Clear</b> throws all the text away. Both show a large
<b>Undo</b> button for a few seconds.</li>
</ul>

<h2>The control box</h2>
<p>A grey <b>control box</b> follows the letters at the bottom of every box. Steer into it, then into an
action: the action happens when the crosshair enters its box, as a letter is written.</p>
<ul>
<li><b>Letters</b> goes back to the letters; <b>Stop</b> stops writing.</li>
<li><b>&#9003; Char</b>, <b>&#9003; Word</b>, <b>&#9003; Sentence</b> delete the message's last character, word
or sentence, and what the model learned from it.</li>
<li><b>Speak</b> reads the message aloud; <b>Copy</b> copies all the text; <b>New message</b> finishes the
message.</li>
<li><b>More</b> holds what the toolbars do, for writing with no pointer and no keyboard: <b>Undo writing</b>,
<b>Save</b>, <b>Speak sentence</b>, <b>Restore unsaved</b> (the text an earlier run left unsaved), <b>Faster</b>,
<b>Slower</b> and <b>Clear</b>.</li>
<li><b>Phrases</b> holds your quick phrases, the ones you use most in the biggest boxes.</li>
</ul>
<p>It is on for the eye-tracker and head-mouse presets and off for the mouse; Writing &gt; Control box turns it
on or off.</p>

<h2>Writing into other programs (direct output)</h2>
<ul>
<li>Output &gt; <b>Type into the focused program</b> types what you write into the program that has the
keyboard focus: click its text field once, then write here. This window stays on top and never takes the
focus.</li>
<li>A letter is typed once the zoom has gone past its box (one or two letters behind the crosshair); when you
stop, the rest is typed at once. Backing out, and Undo writing, send Backspace.</li>
<li><b>New message</b> keeps what was typed; Backspace never reaches back into it. When the keys cannot be sent
(no program has the focus), the status bar says why and the text waits here.</li>
</ul>

<h2>Speech</h2>
<ul>
<li><b>Speak</b> (the Text menu, Ctrl+R) reads the current message aloud; the control box's Speak and Speak
sentence do it without a click.</li>
<li>Output &gt; <b>Speak on stop</b> reads the message whenever writing stops.</li>
<li>It uses the system's voices in the language you write; when there is no voice for it, the status bar says
so.</li>
</ul>

<h2>Speed</h2>
<p>Speed is in bits per second. With automatic speed on (the mouse preset) it rises while you steer steadily
and falls when you hunt back and forth; it never rises while the pointer rests. Turbo (or holding Shift)
goes faster for a moment.</p>

<h2>Where things are kept</h2>
<p>Nothing leaves this computer.</p>
<ul>
<li><b>Save</b> writes all the text at once into a new file named by the time, in<br><tt>{d}</tt><br>
(Save As, in the File menu, asks where.)</li>
<li>The text being written is kept safe as you write, in <tt>{j}</tt>. Text that was never saved is offered
back at the next start.</li>
<li>What the model learned about you is in your profile, in <tt>{p}</tt> (one folder per profile; choose
one with Profile). <tt>dasher-rnn profile list</tt> shows them.</li>
<li>Preferences are in <tt>{s}</tt>.</li>
</ul>

<h2>Version and help</h2>
<ul>
<li>This is dasher-rnn version {html.escape(__version__)}.</li>
{_support_html()}
</ul>
"""


class HelpDialog(QDialog):
    def __init__(self, parent: QWidget | None, documents: Path, journal: Path, profiles: Path, settings: Path) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Help: dasher-rnn {__version__}")
        self.setStyleSheet(DIALOG_STYLE)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(True)  # only the support link: it opens in the web browser
        self.browser.setHtml(help_html(documents, journal, profiles, settings))
        self.browser.setStyleSheet("font-size: 14pt;")
        buttons = QHBoxLayout()
        self.up = QPushButton("▲ Page up")
        self.down = QPushButton("▼ Page down")
        close = QPushButton("Close")
        close.setMinimumSize(200, 64)
        bar = self.browser.verticalScrollBar()
        self.up.clicked.connect(lambda: bar.triggerAction(QAbstractSlider.SliderAction.SliderPageStepSub))
        self.down.clicked.connect(lambda: bar.triggerAction(QAbstractSlider.SliderAction.SliderPageStepAdd))
        close.clicked.connect(self.accept)
        for button in (self.up, self.down):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addLayout(buttons)
        self.resize(980, 760)

    def text(self) -> str:
        return self.browser.toPlainText()
