"""The verdict over time: the runs of a series combined into segment estimates, every
change of a ratio found, sized and explained (method and the real series: docs/TREND.md).

``model`` holds the types; ``analysis.analyze`` runs it all. `consensus/estimate` judges
one run; this package judges the runs of a series.
"""
