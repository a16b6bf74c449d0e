"""mmrag.metrics"""
