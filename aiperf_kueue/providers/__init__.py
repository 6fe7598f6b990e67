"""Pulumi dynamic providers: the classes Pulumi pickles into a stack's state, and their runtime I/O."""
