"""qprof.tui: the Textual monitor behind ``qprof monitor``.

Layout: ``model`` (plain view data and formatting), ``sources/`` (one class per origin
of data: hardware, load, store, consensus, measure), ``collect`` (sources -> one Frame
per refresh; standalone / daemon / snapshot resolution), ``widgets/`` (one widget per
module), ``app`` (the Textual App), ``report`` (Markdown export). Nothing here is
imported by other qprof commands, and importing it does not pull in numba, oqs or pyperf.
"""
