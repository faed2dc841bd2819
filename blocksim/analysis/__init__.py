"""Analysis of a diagram around an operating point: linearisation with analysis points (inputs,
outputs, loop openings), as continuous or exact z-domain models (docs/analysis.md)."""
from .linearize import LinearModel, linear_model, linearize
from .points import AnalysisSettings, analysis_settings

__all__ = ["AnalysisSettings", "LinearModel", "analysis_settings", "linear_model", "linearize"]
