"""Stack files read as the Pulumi CLI reads them (yaml.v3's rules, bounds, ``secure:`` values), plan files read
within bounds, and the inventory rewritten in place."""
