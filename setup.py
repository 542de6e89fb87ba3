"""The one thing pyproject.toml cannot say: the package list.

The shipped chain profiles live in the top-level ``profiles/`` directory (the design
card's layout) and install as the package ``qprof.profiles``; ``packages.find`` cannot see
a package outside ``qprof/``, so the list is every ``qprof*`` package found plus that one.
Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["qprof", "qprof.*"]), "qprof.profiles"],
    package_dir={"qprof.profiles": "profiles"},
)
