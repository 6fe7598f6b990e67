"""Thin Pulumi ComponentResources over the pure builders in ``aiperf_kueue``."""
