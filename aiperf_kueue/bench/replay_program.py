"""The replay program: :data:`aiperf_kueue.bench.replay.RECORDS` registered again, nothing else."""

from aiperf_kueue.bench import replay

replay.register(replay.RECORDS)
