"""The replay program: :data:`bench.replay.RECORDS` registered again, nothing else."""

from bench import replay

replay.register(replay.RECORDS)
