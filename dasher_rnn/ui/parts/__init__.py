"""The main window's parts: each owns one concern and its controls, and is built from what it needs.

A part never depends on ``MainWindow`` nor reaches into it: it is given the controller, the widgets it drives,
the preferences keeper and the status bar's notices (and, where it needs one, the window as a plain Qt
``QWidget`` or ``QMainWindow``: the parent of its actions, its bars, its flags), and it tells the rest what
happened through Qt signals. ``ui/window.py`` builds the
parts, lays their controls out in menus and toolbars, and connects their signals.

| part | owns |
|---|---|
| ``status.StatusPart`` | the status bar: the writing figures, what learns, and one notice per topic |
| ``prefs.PrefsKeeper`` | the preferences in effect, remembered and saved once a change settles |
| ``writing.WritingPart`` | start, stop, speed, turbo, control mode, undo writing, and the frame tick |
| ``input.InputPart`` | what moves the pointer (mouse, gaze, head pointer, switches) and the input preset |
| ``messages.MessagesPart`` | the text: copy, save, clear, new message and their undo, unsaved text from before |
| ``output.OutputPart`` | direct output into the focused program, copy all and speak on stop |
| ``speech.SpeechPart`` | reading a message aloud |
| ``looks.LooksPart`` | font, colours, the text panel, full screen, label size |
| ``learning.LearningPart`` | whether the model learns from what is written |
| ``progress.ProgressPart`` | the profile's record of progress and its picture |
| ``phrases.PhrasesPart`` | the profile's quick phrases: their dialog and the zoom's Phrases box |
| ``dock.DockPart`` | the docked layout while direct output is on |
| ``switches.SwitchPart`` | the keys, mouse buttons and switch source that feed a switch mode (part of ``InputPart``) |
"""
