"""mmrag.scenarios"""
