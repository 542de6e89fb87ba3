"""qprof.service"""
