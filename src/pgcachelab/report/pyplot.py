"""matplotlib as every renderer uses it, configured here once: the Agg backend draws into files
and never opens a window (a report is built on servers without a display); SVG text stays text
(the page's own font draws it, a reader can select and search it), where drawing each glyph as
a path made the pages twice as large and their build 12% slower (the fixture runs' reports:
1.6 MB against 0.7 MB, 42-45 s against 37-40 s).

Every text a figure draws is printable (printable.py): a run's name, a step's or a point's
label may hold ESC or BEL, which no font has. matplotlib warned "Glyph 27 missing from font"
on stderr with the raw character in the warning (issue 48), and the SVG held it, which XML
does not allow. Text.set_text is where every title, label, tick label, legend entry and
annotation gets its string, at the figure's making and at each draw (tick labels come from
their formatter then): the control characters are escaped there, as the terminal shows them.
"""

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.text import Text

from pgcachelab.printable import printable_lines

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"

_set_text = Text.set_text


def _set_printable_text(self: Text, s) -> None:
    _set_text(self, None if s is None else printable_lines(str(s)))  # lines stay lines


Text.set_text = _set_printable_text  # type: ignore[method-assign]

__all__ = ["plt"]
