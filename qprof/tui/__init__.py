"""qprof.tui"""
