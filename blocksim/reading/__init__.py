"""Reading user input within bounds, in the lowest layer so that every reader of user input (the
diagram and robot loaders, the identification config, the expression language, the compiler, the
engine) applies the same rules and numbers: the one YAML reader (located_yaml) and the limits on
what one input may ask (limits)."""
