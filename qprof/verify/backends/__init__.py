"""One module per verifier backend; each exposes ``probe() -> BackendStatus``,
``make_verifier(suite: SuiteInfo)`` and (where the library can sign)
``make_signer(suite: SuiteInfo)``. Use ``qprof.verify.get_verifier`` rather than
importing these directly: it checks availability first."""
