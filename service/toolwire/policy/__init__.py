"""The policy layer: who may run which tool, with which arguments, where."""
