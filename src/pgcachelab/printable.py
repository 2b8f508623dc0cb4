"""Text from a spec or a store made safe to print on a terminal (issue 35, F10).

A run's name, a point's label or a setting's value can hold anything TOML can: a newline splits
a one-line error or a table row, and an escape sequence (ESC ] 0; ... BEL) retitles or rewrites
the user's terminal. They are shown escaped, as Python would write them; the HTML report has
its own escaping (autoescape).
"""

import unicodedata

# Besides the C0 and C1 controls: line and paragraph separators, which terminals and editors
# break lines at, and the bidirectional overrides, which reorder what the reader sees.
_INVISIBLE_FORMATTING = {"\u2028", "\u2029", *map(chr, range(0x202A, 0x202F)),
                         *map(chr, range(0x2066, 0x206A))}  # fmt: skip
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char: str) -> str:
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _needs_escape(char: str) -> bool:
    return unicodedata.category(char) == "Cc" or char in _INVISIBLE_FORMATTING


def has_control_characters(text: str) -> bool:
    """True when `text` holds a character printable() would escape."""
    return not text.isprintable() and any(_needs_escape(c) for c in text)


def printable(text: str) -> str:
    """`text` on one line, its control characters escaped (a newline as \\n, ESC as \\x1b)."""
    if text.isprintable():  # the usual case, and cheap
        return text
    return "".join(_escaped(c) if _needs_escape(c) else c for c in text)


def printable_lines(text: str) -> str:
    """Several lines of output: their control characters escaped, the newlines between kept."""
    return "\n".join(printable(line) for line in text.split("\n"))
