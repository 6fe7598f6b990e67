"""The bounds every input is held to before any work starts, and why each is where it is.

A stack file, a ``plan --out`` directory and the command-line arguments are checked against
these before anything is planned, so hostile or broken input costs little time and memory and
ends in one config error (exit 2) naming the key, the value (shortened) and the limit.
"""

from __future__ import annotations

#: Bytes in a stack file. The largest committed stack is a few KiB, a fleet of a thousand jobs
#: about 300 KiB; Pulumi itself has no limit, but a stack file is read whole into memory.
MAX_FILE_BYTES = 4 * 2**20

#: Bytes in a ``plan --out`` file (``resources.json``, ``plan.json``): a 10,000-resource plan is
#: about 30 MiB.
MAX_PLAN_FILE_BYTES = 256 * 2**20

#: Nodes a YAML document may have once every alias is expanded. A 4 MiB file of plain
#: mappings has far fewer; a few KiB of nested aliases can mean 10**9 ("billion laughs").
MAX_NODES = 100_000

#: Levels of nesting of mappings and lists. The deepest config (a chart value inside a job
#: spec) is about a dozen; recursion in the parser and in the JSON encoders needs a bound.
MAX_DEPTH = 64

#: Characters in one string (or mapping key). An annotation, the largest Kubernetes string
#: field, may be at most 256 KiB in total.
MAX_STRING = 256 * 2**10

#: Characters in a mapping key: Kubernetes label and annotation keys are at most 253 + 1 + 63.
MAX_KEY = 1024

#: Bytes of the JSON of one config entry that becomes one Kubernetes object (a job or sweep
#: entry, an install's chart values). etcd refuses objects over 1.5 MiB; this leaves room for
#: what the program adds.
MAX_OBJECT_BYTES = 512 * 2**10

#: The integer range of a Kubernetes ``int64`` field (and of JSON numbers the API server keeps
#: exact). Smaller ranges (``int32``) are checked by the fields that have them.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: Significant digits and the decimal exponent range of a percentage or quantity: enough for
#: any float YAML can spell (17 digits) and any real quantity, few enough that exact decimal
#: and fraction arithmetic stays instant (``1e-999999999`` would run for ever).
MAX_DIGITS = 40
MIN_EXPONENT, MAX_EXPONENT = -40, 40

#: Characters in a command-line argument, and in one path component (``NAME_MAX`` on Linux).
MAX_ARGUMENT = 4096
MAX_PATH_COMPONENT = 255

#: Problems reported for one input: past this many, the rest are summarised in one line.
MAX_PROBLEMS = 50
