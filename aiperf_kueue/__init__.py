"""aiperf-kueue: the project's package.

Its core is pure, Pulumi-free Python: the config model, the quota planner, the admission proof
and the manifest builders. The Pulumi-facing parts live in their own subpackages and modules
(``offline``, ``bench``, ``providers``, ``policies``); the layer contracts in ``pyproject.toml``
keep the core free of them.
"""
