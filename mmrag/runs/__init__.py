"""mmrag.runs"""
