"""The upstream releases this program models, as data: Kueue's releases and apiVersions, AIPerf's releases, and
which of AIPerf's submission paths work on which Kueue."""
