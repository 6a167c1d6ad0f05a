"""Drawing one frame of boxes, crosshair, pointer line and dwell ring with a QPainter.

A pure function of its arguments, so the window, screenshots and the frame-time benchmark (painting into a
QImage) draw identically. Control mode's boxes (the control box after the letters and its actions) have their
own colours and are labelled with their names. The viewport says which way the boxes grow (right to left for
Arabic, Hebrew, Persian, mirrored as Dasher does). Colours, brushes, pens and fonts are built once per scheme and
alphabet and kept in a small cache: a frame may hold thousands of boxes and allocating Qt objects for each would
dominate its time.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen, QStaticText, QTransform

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.geometry import Viewport, x_to_screen, y_to_screen
from dasher_rnn.zoom.switching import SwitchView

MIN_LABEL_PX = 12  # the smallest label drawn (font pixels): a box smaller than this on screen gets none until it grows
LABEL_MARGIN_PX = 3.0

# Strong, distinct fills for the high-contrast scheme (dark enough for white labels), by group name.
_HIGH_CONTRAST_GROUPS = {
    "lowercase": "#0b3d91",
    "uppercase": "#8b0000",
    "digits": "#006400",
    "punctuation": "#6a0d83",
    "space": "#3a3a3a",
}
_HIGH_CONTRAST_OTHER = ("#005f6b", "#7a4a00", "#4b0082", "#2f4f4f")
# control mode: the control box, then its actions (alternating), per scheme
_CONTROL_COLOURS = {"default": ("#b8b8b8", "#d7cff2", "#c2b6ea"), "high-contrast": ("#404040", "#6b1f1f", "#2a0c0c")}


@dataclass
class _Palette:
    """Everything one scheme needs to draw, built once."""

    background: QColor
    root: QBrush
    fills: tuple[list[QBrush], list[QBrush]]  # by depth parity, then symbol index
    glyphs: list[str]
    outline: QPen  # also the label pen, so drawing a label needs no pen switch
    crosshair: QPen
    pointer: QPen
    ring_track: QPen
    ring_fill: QPen
    bold: bool
    label_scale: float  # label height as a fraction of the box height
    label_cap: float  # largest label, as a fraction of the view height
    fonts: dict[int, tuple[QFont, float]]  # pixel size -> (font, half its line height)
    labels: dict[tuple[int, int], QStaticText]  # (symbol, pixel size) -> the glyph laid out once
    label_widths: dict[tuple[int, int], tuple[QStaticText, float]]  # (symbol, pixel size) -> (glyph, its width)
    control: tuple[QBrush, QBrush, QBrush]  # the control box, its actions (alternating)
    control_labels: dict[tuple[str, int], tuple[QStaticText, float]]  # (label, pixels) -> (text, its width)

    def font(self, pixels: int) -> tuple[QFont, float]:
        cached = self.fonts.get(pixels)
        if cached is None:
            font = QFont()
            font.setPixelSize(pixels)
            font.setBold(self.bold)
            cached = self.fonts[pixels] = (font, QFontMetricsF(font).height() / 2)
        return cached

    def label(self, symbol: int, pixels: int) -> QStaticText:
        """The symbol's glyph at this size; laying text out is most of a label's cost, so it is done once."""
        key = (symbol, pixels)
        text = self.labels.get(key)
        if text is None:
            text = self.labels[key] = QStaticText(self.glyphs[symbol])
            text.setTextFormat(Qt.TextFormat.PlainText)
            text.prepare(QTransform(), self.font(pixels)[0])
        return text

    def label_and_width(self, symbol: int, pixels: int) -> tuple[QStaticText, float]:
        """The symbol's glyph at this size and how wide it is (a label that ends at a box's edge needs both)."""
        key = (symbol, pixels)
        cached = self.label_widths.get(key)
        if cached is None:
            text = self.label(symbol, pixels)
            cached = self.label_widths[key] = (text, text.size().width())
        return cached

    def control_label(self, label: str, pixels: int) -> tuple[QStaticText, float]:
        """A control box's name at this size, and how wide it is."""
        key = (label, pixels)
        cached = self.control_labels.get(key)
        if cached is None:
            font = self.font(pixels)[0]
            text = QStaticText(label)
            text.setTextFormat(Qt.TextFormat.PlainText)
            text.prepare(QTransform(), font)
            cached = self.control_labels[key] = (text, QFontMetricsF(font).horizontalAdvance(label))
        return cached


_PALETTES: dict[tuple, _Palette] = {}


def _pen(colour: str | QColor, width: float = 0.0) -> QPen:
    pen = QPen(QColor(colour))
    pen.setWidthF(width)  # 0: a cosmetic one-pixel line
    pen.setCapStyle(Qt.PenCapStyle.FlatCap)
    return pen


def _palette(scheme: str, alphabet: Alphabet) -> _Palette:
    key = (scheme, alphabet.name, alphabet.symbols)
    palette = _PALETTES.get(key)
    if palette is not None:
        return palette
    high = scheme == "high-contrast"
    even: list[QBrush] = []
    odd: list[QBrush] = []
    group_index = {g.name: i for i, g in enumerate(alphabet.groups)}
    for ch in alphabet.symbols:
        group = alphabet.group_of(ch)
        if high:
            base = QColor(_HIGH_CONTRAST_GROUPS.get(group.name)
                          or _HIGH_CONTRAST_OTHER[group_index[group.name] % len(_HIGH_CONTRAST_OTHER)])
            # neighbours at alternate depths: the strong colour and a near-black, so every edge is obvious
            even.append(QBrush(base))
            odd.append(QBrush(base.darker(260)))
        else:
            base = QColor(group.colour)
            even.append(QBrush(base.lighter(104)))
            odd.append(QBrush(base.darker(112)))
    palette = _Palette(
        background=QColor("#000000" if high else "#ffffff"),
        root=QBrush(QColor("#000000" if high else "#ffffff")),
        fills=(even, odd),
        glyphs=[alphabet.glyph(ch) for ch in alphabet.symbols],
        outline=_pen("#ffffff" if high else "#3c3c3c", 1.5 if high else 0.0),
        crosshair=_pen("#ffff00" if high else "#c00000", 3.0 if high else 2.0),
        pointer=_pen("#ffff00" if high else "#c00000", 3.0 if high else 1.5),
        ring_track=_pen("#808000" if high else "#bbbbbb", 4.0 if high else 3.0),
        ring_fill=_pen("#ffff00" if high else "#c00000", 6.0 if high else 4.0),
        bold=high,
        label_scale=0.8 if high else 0.65,
        label_cap=0.09 if high else 0.06,
        fonts={},
        labels={},
        label_widths={},
        control=tuple(QBrush(QColor(c)) for c in _CONTROL_COLOURS["high-contrast" if high else "default"]),
        control_labels={},
    )
    _PALETTES[key] = palette
    return palette


def label_pixels(shown: float, width: float, label_scale: float, cap: int, min_px: int = MIN_LABEL_PX) -> int:
    """The font size (pixels) of the label of a box ``shown`` pixels high and ``width`` wide on screen; 0 for no
    label: a label is never drawn smaller than ``min_px``, so a box too small for one gets none until it grows."""
    if shown < min_px or width < min_px:
        return 0
    return max(min_px, min(int(shown * label_scale), cap))


def paint_frame(painter: QPainter, frame: Frame, viewport: Viewport, alphabet: Alphabet, scheme: str,
                pointer_screen: tuple[float, float] | None, dwell_progress: float,
                min_label_px: int = MIN_LABEL_PX) -> None:
    """Draw ``frame`` filling ``viewport`` (boxes largest first, so children cover their parents); labels are
    at least ``min_label_px`` high, and boxes too small for that are drawn without one.

    Each box reaches from the view's edge to its outer edge, where its label is, as in Dasher: for a right to
    left viewport (``viewport.mirrored``) the boxes grow from the left edge and a label ends at the box's right
    edge; the glyphs themselves are never mirrored."""
    p = _palette(scheme, alphabet)
    width, height = viewport.width, viewport.height
    painter.fillRect(QRectF(0.0, 0.0, width, height), p.background)
    painter.setPen(p.outline)  # for the labels here, the outlines at the end
    min_px = max(1, int(min_label_px))
    cap = max(min_px, int(height * p.label_cap))
    paint_boxes = _paint_boxes_rtl if viewport.mirrored else _paint_boxes_ltr
    rects = paint_boxes(painter, p, frame, viewport, min_px, cap)
    # Outlines in one call: a box's outline never crosses its descendants (they lie inside it, at most touching
    # its edges), so drawing them last looks the same as drawing each with its box.
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRects(rects)
    _paint_crosshair(painter, p, viewport, pointer_screen, dwell_progress)


def _paint_boxes_ltr(painter: QPainter, p: _Palette, frame: Frame, viewport: Viewport, min_px: int,
                     cap: int) -> list[QRectF]:
    """Fill and label the boxes, each from the right edge to its label at its left edge; their rectangles."""
    width, height, scale, x_scale = viewport.width, viewport.height, viewport.scale, viewport.x_scale
    fills = p.fills
    rects: list[QRectF] = []
    label_scale = p.label_scale
    current_font = 0
    half_line = 0.0
    label = p.label
    for drawn in frame.boxes:
        box = drawn.box
        y1, y2 = drawn.y1, drawn.y2
        top = y_to_screen(y1) * scale
        bottom = y_to_screen(y2) * scale
        left = width - x_to_screen(y2 - y1) * x_scale  # viewport.screen_x, inlined: thousands of boxes a frame
        symbol = box.symbol
        rect = QRectF(left, top, width - left, bottom - top)
        item = box.item
        if item is not None:  # control mode's boxes
            painter.fillRect(rect, p.control[0] if item.action is None else p.control[1 + (symbol & 1)])
            rects.append(rect)
            _paint_control_label(painter, p, item.label, top, bottom, left, width, height, label_scale, cap, min_px)
            current_font = 0
            continue
        painter.fillRect(rect, p.root if symbol < 0 else fills[box.depth & 1][symbol])
        rects.append(rect)
        if symbol < 0:
            continue
        # label the part of the box on screen, centred vertically, at its left edge
        vis_top = top if top > 0.0 else 0.0
        vis_bottom = bottom if bottom < height else height
        shown = vis_bottom - vis_top
        pixels = label_pixels(shown, width - left, label_scale, cap, min_px)
        if not pixels:
            continue
        if pixels != current_font:
            font, half_line = p.font(pixels)
            painter.setFont(font)
            current_font = pixels
        x = (left if left > 0.0 else 0.0) + LABEL_MARGIN_PX
        painter.drawStaticText(QPointF(x, (vis_top + vis_bottom) / 2 - half_line), label(symbol, pixels))
    return rects


def _paint_boxes_rtl(painter: QPainter, p: _Palette, frame: Frame, viewport: Viewport, min_px: int,
                     cap: int) -> list[QRectF]:
    """``_paint_boxes_ltr`` mirrored (Dasher's ``RightToLeft``): each box from the left edge to its label, which
    ends at the box's right edge (Dasher's ``DoDelayedText``: the text's right end at the box's outer edge)."""
    width, height, scale, x_scale = viewport.width, viewport.height, viewport.scale, viewport.x_scale
    fills = p.fills
    rects: list[QRectF] = []
    label_scale = p.label_scale
    current_font = 0
    half_line = 0.0
    label = p.label_and_width
    for drawn in frame.boxes:
        box = drawn.box
        y1, y2 = drawn.y1, drawn.y2
        top = y_to_screen(y1) * scale
        bottom = y_to_screen(y2) * scale
        right = x_to_screen(y2 - y1) * x_scale  # viewport.screen_x, inlined
        symbol = box.symbol
        rect = QRectF(0.0, top, right, bottom - top)
        item = box.item
        if item is not None:
            painter.fillRect(rect, p.control[0] if item.action is None else p.control[1 + (symbol & 1)])
            rects.append(rect)
            _paint_control_label(painter, p, item.label, top, bottom, 0.0, min(right, width), height, label_scale,
                                 cap, min_px, at_end=True)
            current_font = 0
            continue
        painter.fillRect(rect, p.root if symbol < 0 else fills[box.depth & 1][symbol])
        rects.append(rect)
        if symbol < 0:
            continue
        vis_top = top if top > 0.0 else 0.0
        vis_bottom = bottom if bottom < height else height
        shown = vis_bottom - vis_top
        pixels = label_pixels(shown, right, label_scale, cap, min_px)
        if not pixels:
            continue
        if pixels != current_font:
            font, half_line = p.font(pixels)
            painter.setFont(font)
            current_font = pixels
        text, advance = label(symbol, pixels)
        x = (right if right < width else width) - LABEL_MARGIN_PX - advance
        painter.drawStaticText(QPointF(x, (vis_top + vis_bottom) / 2 - half_line), text)
    return rects


def _paint_control_label(painter: QPainter, p: _Palette, label: str, top: float, bottom: float, left: float,
                         right: float, height: float, label_scale: float, cap: int, min_px: int,
                         at_end: bool = False) -> None:
    """A control box's name at its left edge (``at_end``: ending at its right edge), as large as a letter's label
    would be but fitting its width; the box reaches from ``left`` to ``right``, the latter inside the view."""
    vis_top, vis_bottom = max(top, 0.0), min(bottom, height)
    x = max(left, 0.0) + LABEL_MARGIN_PX
    room = right - x - LABEL_MARGIN_PX
    pixels = label_pixels(vis_bottom - vis_top, room, label_scale, cap, min_px)
    if not pixels:
        return
    text, advance = p.control_label(label, pixels)
    if advance > room:  # shrink to fit, once: widths scale with the font size
        pixels = int(pixels * room / advance)
        if pixels < min_px:
            return
        text, advance = p.control_label(label, pixels)
    if at_end:
        x = right - LABEL_MARGIN_PX - advance
    font, half_line = p.font(pixels)
    painter.setFont(font)
    painter.drawStaticText(QPointF(x, (vis_top + vis_bottom) / 2 - half_line), text)


def _paint_crosshair(painter: QPainter, p: _Palette, viewport: Viewport, pointer_screen: tuple[float, float] | None,
                     dwell_progress: float) -> None:
    cx, cy = viewport.crosshair
    arm = viewport.height * 0.03
    painter.setBrush(Qt.BrushStyle.NoBrush)
    if pointer_screen is not None:
        painter.setPen(p.pointer)
        painter.drawLine(QPointF(cx, cy), QPointF(pointer_screen[0], pointer_screen[1]))
    painter.setPen(p.crosshair)
    painter.drawLine(QPointF(cx - arm, cy), QPointF(cx + arm, cy))
    painter.drawLine(QPointF(cx, cy - arm), QPointF(cx, cy + arm))
    if dwell_progress > 0:
        radius = viewport.height * 0.045
        ring = QRectF(cx - radius, cy - radius, 2 * radius, 2 * radius)
        painter.setPen(p.ring_track)
        painter.drawEllipse(ring)
        painter.setPen(p.ring_fill)
        painter.drawArc(ring, 90 * 16, -int(360 * 16 * min(dwell_progress, 1.0)))  # clockwise from the top


_SWITCH_COLOURS = {"default": ("#d01c8b", "#7b3294"), "high-contrast": ("#ffff00", "#00ffff")}  # active, other


@dataclass(frozen=True)
class ConfirmTarget:
    """The target that confirms an action waiting for it (``WritingController.pending``), in Dasher coordinates."""

    x: float
    y: float
    radius: float
    label: str  # what it asks ("Speak?")
    how: str  # how to confirm ("Look here to confirm")
    progress: float = 0.0  # the dwell on it so far (0..1)


def paint_confirm(painter: QPainter, target: ConfirmTarget, viewport: Viewport, scheme: str) -> None:
    """The confirmation target over the boxes: a filled disc with its question and how to answer it, and the dwell's
    ring filling round it. Its size on the screen follows the view's height (as Dasher's coordinates do)."""
    high = scheme == "high-contrast"
    cx, cy = viewport.to_screen(target.x, target.y)
    radius = target.radius * viewport.scale
    disc = QRectF(cx - radius, cy - radius, 2 * radius, 2 * radius)
    painter.setPen(_pen("#ffff00" if high else "#1a7f37", max(3.0, viewport.height / 150)))
    painter.setBrush(QColor(0, 0, 0, 230) if high else QColor(230, 255, 236, 235))
    painter.drawEllipse(disc)
    if target.progress > 0:
        painter.setPen(_pen("#00ffff" if high else "#d01c8b", max(6.0, viewport.height / 60)))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawArc(disc, 90 * 16, -int(360 * 16 * min(target.progress, 1.0)))
    font = painter.font()
    font.setPixelSize(max(14, int(radius / 4)))
    font.setBold(True)
    painter.setFont(font)
    painter.setPen(QColor("#ffff00" if high else "#0b3d1c"))
    inner = disc.adjusted(radius * 0.2, radius * 0.25, -radius * 0.2, -radius * 0.25)
    painter.drawText(inner, int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap),
                     f"{target.label}\n{target.how}")


def paint_switch(painter: QPainter, switch: SwitchView, viewport: Viewport, scheme: str) -> None:
    """What a switch mode shows over the boxes (input/switch.py's ``SwitchView``): the scanning boxes outlined, the
    highlighted one bold, the back box as a frame round the view; the dynamic modes' points as marks at the edge
    the boxes grow from (one-button: where the zoom heads, filled; two-button: the heights a press brings to the
    crosshair). In Dasher coordinates through the viewport, so right to left mirrors it."""
    active, other = (QColor(c) for c in _SWITCH_COLOURS.get(scheme, _SWITCH_COLOURS["default"]))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    thin, bold = max(1.0, viewport.height / 300), max(3.0, viewport.height / 100)
    for box in switch.boxes:
        painter.setPen(_pen(active if box.highlighted else other, bold if box.highlighted else thin))
        if box.back:
            inset = bold
            painter.drawRect(QRectF(inset, inset, viewport.width - 2 * inset, viewport.height - 2 * inset))
            continue
        left, right = viewport.box_columns(box.y2 - box.y1)
        painter.drawRect(QRectF(QPointF(left, viewport.screen_y(box.y1)), QPointF(right, viewport.screen_y(box.y2))))
    size = viewport.height * 0.025
    for marker in switch.markers:
        x, y = viewport.to_screen(marker.x, marker.y)
        colour = active if marker.active else other
        painter.setPen(_pen(colour, thin))
        painter.setBrush(QBrush(colour) if marker.active else Qt.BrushStyle.NoBrush)
        painter.drawEllipse(QPointF(x, y), size, size)
    painter.setBrush(Qt.BrushStyle.NoBrush)
