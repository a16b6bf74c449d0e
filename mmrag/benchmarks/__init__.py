"""mmrag.benchmarks"""
