"""mmrag.models"""
