"""The version of blocksim, in a module of its own so that the engine can record it in a run's
metadata without importing the package face."""
__version__ = "0.1.0"
