"""The PySide6 desktop window: a thin layer drawing what the Qt-free ``WritingController`` computes."""
