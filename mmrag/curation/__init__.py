"""mmrag.curation"""
