"""The replay program: :data:`tests.bench.replay.RECORDS` registered again, nothing else."""

from tests.bench import replay

replay.register(replay.RECORDS)
