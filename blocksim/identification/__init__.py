"""Dynamic parameter identification of serial arms: regressor, base parameters, Fourier excitation,
data processing, least-squares and physically consistent estimation, validation, robot-file output.

The classical identification workflow (Khalil & Dombre 2002; Gautier and Khalil; Swevers et al. 2007; Wensing,
Kim and Slotine 2017), run end to end by `python cli.py identify CONFIG.yaml --out DIR`
(`blocksim.identification.pipeline.run`).
"""
from .base import BaseParameters, base_parameters, random_states
from .estimation import (Estimate, complete_standard, consistency, ordinary_least_squares,
                         physically_consistent, pseudo_inertia, weighted_least_squares)
from .excitation import FourierExcitation, optimise_excitation, random_excitation
from .processing import Measurement, ProcessedData, corrupt, process
from .regressor import IdentificationModel
from .robotfile import write_robot_file
from .validation import relative_rms_error, residual_check

__all__ = ["IdentificationModel", "BaseParameters", "base_parameters", "random_states",
           "FourierExcitation", "optimise_excitation", "random_excitation",
           "Measurement", "ProcessedData", "corrupt", "process",
           "Estimate", "ordinary_least_squares", "weighted_least_squares", "physically_consistent",
           "complete_standard", "consistency", "pseudo_inertia",
           "relative_rms_error", "residual_check", "write_robot_file"]
