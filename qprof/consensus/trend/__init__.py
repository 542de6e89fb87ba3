"""The verdict over time (issue 29): runs of a series combined into segment estimates,
known and detected change points, each step sized and explained.

Modules: ``model`` (the types), ``from_records`` (a run's records -> run points),
``codec`` (run points as JSON data), ``segment`` (one segment's estimate), ``detector``
(the sequential CUSUM), ``segmentation`` (locating and sizing a step), ``explain`` (what
changed), ``analysis`` (all of it over series: :func:`analysis.analyze`), ``fleet``
(changes across nodes), ``verdict`` (the segment's figures into the coverage verdict),
``report`` (JSON and one-line texts). `consensus/estimate` judges one run; this package
judges the runs of a series.
"""
