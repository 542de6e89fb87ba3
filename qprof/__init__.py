"""qprof: what post-quantum signature verification costs on each core, and whether
a chain's Verify-Unit constants still cover it."""

__version__ = "0.1.0"
