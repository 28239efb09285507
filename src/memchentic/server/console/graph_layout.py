"""Where the graph view draws its nodes and labels: a deterministic layout whose
labels never overlap (issue 24, item 7).

Nodes sit on one ring per hop around the memory in the middle, each ring wide
enough for its nodes. Labels are cut to ``LABEL_CHARS`` (the full text goes in
a tooltip) and drawn in a monospace font, so the box each one covers is known
here, without a browser: ``LABEL_EM`` of the font size per character. They are
placed one by one, the middle first, each at the first spot around its node,
tried nearest first, whose box meets no label placed before it and no node; a
spot far enough out is always free, so every label finds one. A label that had
to move away from its node gets a thin leader line back to it. The drawing's
size is then whatever the placed boxes cover, so nothing is clipped.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Label font size, in the drawing's units (the page draws them 1:1, in CSS px).
LABEL_FONT = 13
#: Advance of one monospace character, in ems (DejaVu Sans Mono, Menlo: 0.602), with room.
LABEL_EM = 0.62
#: Characters of a label before it is cut with an ellipsis.
LABEL_CHARS = 22
#: Clear space kept around every label box and node, and around the drawing.
GAP = 3
MARGIN = 12
#: Node radii: the memory in the middle, and its neighbours.
RADIUS = {0: 14, 1: 9, 2: 9}


@dataclass(frozen=True)
class Box:
    left: float
    top: float
    right: float
    bottom: float

    def meets(self, other: Box) -> bool:
        return (self.left < other.right + GAP and other.left < self.right + GAP
                and self.top < other.bottom + GAP and other.top < self.bottom + GAP)  # fmt: skip


def label_text(text: str) -> str:
    """One line of at most ``LABEL_CHARS`` characters, cut with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= LABEL_CHARS:
        return line
    return line[: LABEL_CHARS - 1].rstrip() + "…"


def label_width(text: str) -> float:
    """The width a label takes: a wide (East Asian) character counts twice."""
    cells = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return cells * LABEL_EM * LABEL_FONT


def _spots(
    x: float, y: float, r: float, w: float, h: float, angle: float
) -> Iterator[tuple[int, Box]]:
    """Boxes for a ``w`` x ``h`` label around a node at (x, y), nearest first: on the
    side facing away from the middle, then the others, then further out each round."""
    ox, oy = math.cos(angle), math.sin(angle)
    sides = [(0.0, 1.0), (0.0, -1.0), (1.0, 0.0), (-1.0, 0.0)]  # below, above, right, left
    sides.sort(key=lambda s: -(s[0] * ox + s[1] * oy))  # stable: ties keep that order
    step = h + GAP
    for ring in range(0, 400):
        reach = r + GAP + ring * step
        for dx, dy in sides:
            for slide in (0.0, -0.5, 0.5):  # centred on the node, or slid along that side
                if dy:  # above or below: centred horizontally, slid by half a width
                    left = x - w / 2 + slide * w
                    top = y + reach if dy > 0 else y - reach - h
                else:  # right or left: centred vertically, slid by a line
                    left = x + reach if dx > 0 else x - reach - w
                    top = y - h / 2 + slide * 2 * step
                yield ring, Box(left, top, left + w, top + h)
    raise AssertionError("no free spot for a label")  # unreachable: the far rings are empty


def layout(center: Any, neighbours: list[Any]) -> dict[str, Any]:
    """Node and label positions, lines between nodes, and the drawing's size.

    :param center: the memory in the middle (a ``MemoryRecord``).
    :param neighbours: its ``Neighbor`` results (``memory``, ``depth``, ``from_id``, ``via``).
    """
    rings = {1: [n for n in neighbours if n.depth == 1], 2: [n for n in neighbours if n.depth == 2]}
    nodes: dict[str, dict[str, Any]] = {
        center.id: {"id": center.id, "x": 0.0, "y": 0.0, "depth": 0, "angle": math.pi / 2,
                    "full": center.title or center.content},
    }  # fmt: skip
    radius = 0.0
    for depth, ring in rings.items():
        # each ring leaves about two label lines of arc per node, and room from the last
        radius = max(radius + 150, len(ring) * 2.4 * LABEL_FONT * 1.35 / math.pi)
        turn = 2 * math.pi / max(1, len(ring))
        for i, n in enumerate(ring):
            angle = turn * (i + (0.5 if depth == 2 else 0.0))  # the outer ring sits in the gaps
            nodes[n.memory.id] = {
                "id": n.memory.id, "depth": depth, "angle": angle,
                "x": radius * 1.25 * math.cos(angle), "y": radius * 0.85 * math.sin(angle),
                "full": n.memory.title or n.memory.content,
            }  # fmt: skip
    taken = [Box(n["x"] - RADIUS[n["depth"]], n["y"] - RADIUS[n["depth"]],
                 n["x"] + RADIUS[n["depth"]], n["y"] + RADIUS[n["depth"]])
             for n in nodes.values()]  # fmt: skip
    height = round(LABEL_FONT * 1.35, 2)
    for n in nodes.values():
        text = label_text(n["full"])
        r = RADIUS[n["depth"]]
        spots = _spots(n["x"], n["y"], r, label_width(text), height, n["angle"])
        far, box = next((f, b) for f, b in spots if not any(b.meets(o) for o in taken))
        taken.append(box)
        n.update(label=text, full=n["full"][:300], box=box, leader=far > 0)
    left, top = min(b.left for b in taken) - MARGIN, min(b.top for b in taken) - MARGIN
    right, bottom = max(b.right for b in taken) + MARGIN, max(b.bottom for b in taken) + MARGIN
    for n in nodes.values():
        box = n.pop("box")
        n["x"], n["y"] = round(n["x"] - left, 1), round(n["y"] - top, 1)
        n["r"] = RADIUS[n["depth"]]
        # text is drawn from its left end, on a baseline one font size below the box top
        n["lx"], n["ly"] = round(box.left - left, 1), round(box.top - top + LABEL_FONT, 1)
        n["lcx"] = round((box.left + box.right) / 2 - left, 1)  # where a leader line ends
        n["lcy"] = round((box.top + box.bottom) / 2 - top, 1)
    lines = [
        {"a": nodes[n.from_id], "b": nodes[n.memory.id], "via": n.via}
        for n in neighbours
        if n.from_id in nodes and n.memory.id in nodes
    ]
    return {"nodes": list(nodes.values()), "lines": lines, "neighbours": neighbours,
            "width": math.ceil(right - left), "height": math.ceil(bottom - top)}  # fmt: skip
