"""qprof.consensus"""
