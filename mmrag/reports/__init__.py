"""mmrag.reports"""
