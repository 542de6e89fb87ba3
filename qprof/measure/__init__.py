"""qprof.measure"""
