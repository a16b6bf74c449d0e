"""mmrag.judging"""
