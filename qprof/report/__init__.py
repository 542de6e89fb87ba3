"""qprof.report: Markdown and HTML reports of recorded runs (JSONL).

A layer above ``consensus`` (the reports show its estimates and verdicts) and below
``commands``: ``markdown`` (``render_report``; columns in ``columns``, the machine section
in ``machine``), ``html`` (``render_html``; chart primitives in ``html_svg``, also used by
the monitor's report).
"""
