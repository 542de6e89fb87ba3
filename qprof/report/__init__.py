"""qprof.report: Markdown and HTML reports of recorded runs (JSONL).

A layer above ``consensus`` (the reports show its estimates and verdicts, the figures
`qprof check` gives for the same records: ``figures``) and below ``commands``:
``markdown`` (``render_report``; columns in ``columns``, the machine section in
``machine``; the chain's rule in ``policy``), ``html`` (``render_html``; chart primitives
in ``html_svg``, also used by the monitor's report). ``measure`` only reads the runs.
"""
