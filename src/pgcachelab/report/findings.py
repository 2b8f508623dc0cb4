"""The block a report opens with, "What this run shows": the advice `pgcachelab advise` prints
(report.advice), each recommendation a sentence with its interval, its evidence and limits
folded beneath it."""

import html

from pgcachelab.analysis.advice import Advice


def _sentence(text: str) -> str:
    """As advise prints it (it may begin with a name such as tps: no capital), with a stop."""
    return html.escape(text) + ("" if text.endswith(".") else ".")


def advice_html(item: Advice) -> str:
    """One finding: where it holds, the sentence, then evidence and caveats folded."""
    where = item.topic + (f" [{item.cell}]" if item.cell else "")
    limits = "".join(f"<li>cannot tell: {html.escape(c)}</li>" for c in item.caveats)
    evidence = f"<p>evidence: {html.escape(item.evidence)}</p>" if item.evidence else ""
    folded = (
        f"<details><summary>evidence and limits</summary>{evidence}"
        + (f"<ul>{limits}</ul>" if limits else "")
        + "</details>"
        if evidence or limits
        else ""
    )
    return (
        f"<li class='finding'><span class='where'>{html.escape(where)}</span>: "
        f"{_sentence(item.recommendation)}{folded}</li>"
    )


def findings_html(advice: list[Advice], command: str, title: str = "What this run shows") -> str:
    """`command`: the one that prints the same, e.g. `pgcachelab advise RUN`."""
    items = "".join(advice_html(item) for item in advice)
    return (
        f"<section id='findings' class='findings'><h2>{html.escape(title)}</h2>"
        f"<ul>{items}</ul><p class='note'>The same as <code>{html.escape(command)}</code> "
        "prints; the sections below hold the tables they come from. Intervals are 95% unless "
        "said otherwise.</p></section>"
    )
