"""The block a report opens with, "What this run shows": the advice `pgcachelab advise` prints
(its study's, studies/registry.py), each recommendation a sentence with its interval, its
evidence and limits folded beneath it."""

from markupsafe import Markup

from pgcachelab.analysis.advice import Advice
from pgcachelab.report.render import render


def findings_html(advice: list[Advice], command: str, title: str = "What this run shows") -> Markup:
    """`command`: the one that prints the same, e.g. `pgcachelab advise RUN`. Each sentence as
    advise prints it (it may begin with a name such as tps: no capital), with a stop."""
    return Markup(render("findings.html.j2", advice=advice, command=command, title=title))
