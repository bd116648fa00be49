"""Facts about terminal escape sequences in a sample's output: CEL's ``ansi`` map, as Gavel names them.

``final_text`` is the text a terminal would show at the end (cursor moves,
line erases and carriage returns applied); ``duplicate_lines`` are the
non-blank lines of it that appear more than once (spinner frames left behind).
"""

from __future__ import annotations

import re

_COLOR = re.compile(r"\x1b\[(3[0-7]|38;[25];|4[0-7]|48;[25];)")
_CURSOR_UPDATE = re.compile(r"\x1b\[([0-9]*[ABCDHJ]|[0-9]*K|2J|\?25[hl])")
_RESET = re.compile(r"\x1b\[0?m")
_CSI = re.compile(r"\x1b\[([0-9;? ]*)([@-~])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")


def ansi_facts(stdout: str, stderr: str) -> dict[str, object]:
    """The ``ansi`` map of a sample, over stdout followed by stderr."""
    combined = stdout + stderr
    final = final_text(combined)
    duplicates = duplicate_lines(final)
    return {
        "has_any": "\x1b[" in combined,
        "has_color": bool(_COLOR.search(combined)),
        "has_updates": bool(_CURSOR_UPDATE.search(combined)),
        "has_cursor_hide": "\x1b[?25l" in combined,
        "has_cursor_show": "\x1b[?25h" in combined,
        "has_reset": bool(_RESET.search(combined)),
        "stray_controls": any(ch in combined for ch in "\x08\x0b\x0c"),
        "final_text": final,
        "duplicate_lines": [{"text": text, "count": count} for text, count in duplicates],
        "has_duplicates": bool(duplicates),
    }


def final_text(raw: str) -> str:
    """What a terminal shows after ``raw``: a small screen model (cursor moves, erases, CR, LF, BS, TAB)."""
    screen = _Screen()
    position = 0
    while position < len(raw):
        char = raw[position]
        if char == "\x1b":
            csi = _CSI.match(raw, position)
            if csi is not None:
                screen.control(csi.group(1), csi.group(2))
                position = csi.end()
                continue
            osc = _OSC.match(raw, position)
            position = osc.end() if osc is not None else position + 2  # an unknown escape and its next character
            continue
        screen.put(char)
        position += 1
    return "\n".join("".join(row) for row in screen.rows)


def duplicate_lines(text: str) -> list[tuple[str, int]]:
    """Non-blank lines (trimmed) that occur more than once, in first-seen order, with their counts."""
    counts: dict[str, int] = {}
    for line in text.split("\n"):
        trimmed = line.strip()
        if trimmed:
            counts[trimmed] = counts.get(trimmed, 0) + 1
    return [(line, count) for line, count in counts.items() if count > 1]


class _Screen:
    def __init__(self) -> None:
        self.rows: list[list[str]] = [[]]
        self.row = 0
        self.col = 0

    def _goto(self, row: int, col: int) -> None:
        self.row, self.col = max(row, 0), max(col, 0)
        while len(self.rows) <= self.row:
            self.rows.append([])

    def put(self, char: str) -> None:
        if char == "\r":
            self.col = 0
        elif char == "\n":
            self._goto(self.row + 1, 0)
        elif char == "\b":
            self.col = max(self.col - 1, 0)
        elif char == "\t":
            for _ in range(8 - self.col % 8):
                self.put(" ")
        elif char >= " ":
            line = self.rows[self.row]
            line.extend(" " * (self.col - len(line)))
            if self.col < len(line):
                line[self.col] = char
            else:
                line.append(char)
            self.col += 1

    def control(self, params: str, final: str) -> None:
        numbers = [int(p) if p.isdigit() else None for p in params.lstrip("?").split(";")]
        first = numbers[0] if numbers and numbers[0] is not None else None
        count = first if first else 1
        if final == "A":
            self._goto(self.row - count, self.col)
        elif final == "B":
            self._goto(self.row + count, self.col)
        elif final == "E":
            self._goto(self.row + count, 0)
        elif final == "F":
            self._goto(self.row - count, 0)
        elif final == "G":
            self._goto(self.row, count - 1)
        elif final in "Hf":
            column = numbers[1] if len(numbers) > 1 and numbers[1] else 1
            self._goto((first or 1) - 1, column - 1)
        elif final == "K":
            self._erase_line(first or 0)
        elif final == "J" and first == 2:
            self.rows, self.row, self.col = [[]], 0, 0

    def _erase_line(self, mode: int) -> None:
        line = self.rows[self.row]
        if mode == 0:
            del line[self.col :]
        elif mode == 1:
            line.extend(" " * (self.col - len(line)))
            line[: self.col] = [" "] * self.col
        elif mode == 2:
            self.rows[self.row] = []
