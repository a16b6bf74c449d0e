"""Typer sub-applications, one module per area, mounted by :mod:`mmrag.cli`.

Each module here only parses arguments and calls the library; no library module imports them.
"""
