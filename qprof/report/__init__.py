"""Reports from recorded runs (`qprof report`: Markdown, and HTML with charts).

A layer above ``consensus``: the figures come from its estimator and verdict, the same
as `qprof check` gives for the same records; ``measure`` only reads the runs.
"""
