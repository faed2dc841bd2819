"""blocksim's expression language: one table of functions and constants (functions.py), the
`${...}` parameter expressions evaluated at load time (evaluate.py), and the Function block's
expressions compiled to a stack program run at every step (runtime.py)."""
