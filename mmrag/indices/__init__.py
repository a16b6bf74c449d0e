"""mmrag.indices"""
