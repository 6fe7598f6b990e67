"""Nodes into pools and the inventory rewritten in a stack file (``inventory import``), and a stack's inventory
against its nodes (``drift``)."""
