"""Analysis of a diagram around an operating point: linearisation with analysis points (inputs,
outputs, loop openings), as continuous or exact z-domain models; margins; trim
(docs/analysis.md)."""
from .linearize import LinearModel, linear_model, linearize
from .points import AnalysisSettings, analysis_settings
from .trim import Trim, trim

__all__ = ["AnalysisSettings", "LinearModel", "Trim", "analysis_settings", "linear_model",
           "linearize", "trim"]
