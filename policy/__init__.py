"""The aiperf-kueue CrossGuard policy pack: ``pulumi preview --policy-pack policy``."""
