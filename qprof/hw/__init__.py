"""qprof.hw"""
