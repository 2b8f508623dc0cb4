"""matplotlib as every renderer uses it, configured here once: the Agg backend draws into files
and never opens a window (a report is built on servers without a display)."""

import matplotlib
import matplotlib.pyplot as plt

matplotlib.use("Agg")

__all__ = ["plt"]
