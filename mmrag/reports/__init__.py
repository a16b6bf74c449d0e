"""mmrag.reports: reading runs -- tables with confidence intervals, paired tests, paper-style
figures, ``report.md`` and the self-contained HTML sample browser.

Everything here reads a run directory (through :func:`mmrag.runs.frame.load`) and writes new
files; nothing modifies a run.  See docs/reports.md for how to read the outputs.
"""

from mmrag.reports.browser import write_browser
from mmrag.reports.family import humblebench_panel, knowhal_table
from mmrag.reports.paired import model_differences, scenario_differences
from mmrag.reports.plotkit import PLOTS, PlotSpec, register_plot, save_figure
from mmrag.reports.plots import draw_distractor_curve, draw_modality_matrix, draw_strictness, make_plots
from mmrag.reports.plots_family import draw_humblebench_stress, draw_knowhal
from mmrag.reports.render import display_frame, to_markdown, to_rich, write_csv
from mmrag.reports.report import report
from mmrag.reports.tables import TABLES, CIOptions, TableSpec, build_tables, rate_table, register_table

__all__ = [
    "CIOptions",
    "PLOTS",
    "PlotSpec",
    "TABLES",
    "TableSpec",
    "build_tables",
    "display_frame",
    "draw_distractor_curve",
    "draw_humblebench_stress",
    "draw_knowhal",
    "draw_modality_matrix",
    "draw_strictness",
    "humblebench_panel",
    "knowhal_table",
    "make_plots",
    "model_differences",
    "rate_table",
    "register_plot",
    "register_table",
    "report",
    "save_figure",
    "scenario_differences",
    "to_markdown",
    "to_rich",
    "write_browser",
    "write_csv",
]
