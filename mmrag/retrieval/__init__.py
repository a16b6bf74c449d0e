"""mmrag.retrieval"""
