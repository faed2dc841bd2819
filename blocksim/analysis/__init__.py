"""Analysis of a diagram around an operating point: linearisation with analysis points (inputs,
outputs, loop openings), as continuous or exact z-domain models; margins; trim
(docs/analysis.md); the frequency response of the nonlinear diagram measured by a run."""
from .frequency_response import FrequencyResponse, frequency_response
from .linearize import LinearModel, linear_model, linearize
from .points import AnalysisSettings, analysis_settings
from .trim import Trim, trim

__all__ = ["AnalysisSettings", "FrequencyResponse", "LinearModel", "Trim", "analysis_settings",
           "frequency_response", "linear_model", "linearize", "trim"]
