"""Reading user input within bounds: the limits on what one input may ask of blocksim, in the
lowest layer so that every reader of user input (the diagram and robot loaders, the expression
language, the compiler, the engine) applies the same numbers."""
