"""Every helper process qprof starts: a typed job, one launch, one entry point.

A job (:class:`~qprof.measure.child.job.ChildJob`) names the module that runs it and
travels as ``python -m qprof.measure.child KIND --field value ...``;
:mod:`qprof.measure.child.launch` starts it (niceness, streams, stop and timeout) and
``__main__`` enters it.
"""
