"""qprof.verify"""
