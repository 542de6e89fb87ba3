"""What an adversary can make a verifier pay (issue 20).

``keys`` (an SLH-DSA secret key's parts, ADRS lanes), ``ground`` (the key owner grinding
valid signatures whose chains are long; signed by liboqs with the chosen randomness,
``oqs_rng``), ``crafted`` (invalid signatures whose every layer walks long chains) and
``mldsa`` (the ML-DSA rejection that fails last).  Counting lives in
``qprof.verify.slhdsa_calls``; the kernels in ``qprof.verify.nb.slhdsa_grind``.
"""
