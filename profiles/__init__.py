"""The chain profiles qprof ships (TOML), installed as the package ``qprof.profiles``.

The files live in the repository's top-level ``profiles/`` directory; setuptools maps
that directory onto ``qprof.profiles`` (pyproject.toml, ``package-dir``), so a wheel or a
system install carries them as package data beside the code.
"""
