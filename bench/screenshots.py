"""The documentation's screenshots of the window, taken as a user would see it on a real (virtual) screen.

    xvfb-run -s "-screen 0 1600x900x24" python bench/screenshots.py docs/canvas-16x9 "hello, how are you"
    xvfb-run -s "-screen 0 1024x768x24" python bench/screenshots.py docs/canvas-4x3 "hello, how are you"

writes PREFIX-stopped.png (the window as it opens, stopped) and PREFIX-writing.png (part way through writing
the text with the shipped RNN, steered like a user aiming at it). The window is sized to the screen as the
app opens it.
"""

from __future__ import annotations

import argparse

from dasher_rnn.ui.app import take_screenshot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", help="path prefix of the two PNG files")
    parser.add_argument("text", help="the text written in the second picture")
    parser.add_argument("--seconds", type=float, default=12.0, help="simulated seconds of writing (default 12)")
    parser.add_argument("--speed", type=float, default=3.0, help="speed in bits/s (default 3)")
    parser.add_argument("--scheme", default="default", help="colour scheme (default: default)")
    args = parser.parse_args()
    print(take_screenshot(f"{args.prefix}-stopped.png", "", 0.0, args.scheme, args.speed, start=False))
    print(take_screenshot(f"{args.prefix}-writing.png", args.text, args.seconds, args.scheme, args.speed))


if __name__ == "__main__":
    main()
