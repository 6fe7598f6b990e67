"""``python -m tests.fuzz``: the hostile-input fuzzer (``make fuzz``; a small run is in ``make test``).

python -m tests.fuzz --cases 10000            # the contract on 10,000 cases
python -m tests.fuzz --only 1234              # replay one case, with its output
python -m tests.fuzz --oracle PATH --cases N  # loader-level: compare with Pulumi's own reader
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.fuzz import oracle, run
from tests.fuzz.cases import generate


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--only", type=int, default=None, help="run this one case and show what it printed")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--oracle", type=Path, default=None, help="a build of tests/fuzz/oracle (Go): compare loaders")
    args = parser.parse_args()
    if args.worker:
        run.worker()
        return 0
    if args.oracle is not None:
        report = oracle.compare(args.oracle, args.cases, args.seed, args.start)
        print(report.text())
        return 1 if report.mismatches else 0
    if args.only is not None:
        case = generate(args.only, args.seed)
        with tempfile.TemporaryDirectory() as tmp:
            argv = run.materialise(case, Path(tmp))
            code, out, err = run.run_in_process(argv)
            result = run.Result(case, code, out, err, 0.0)
            run.check(result, Path(tmp))
        print(f"case {args.only}: {case.mutations} must_reject={case.must_reject}\nargv: {argv}\nexit {code}")
        print(f"stdout:\n{out[:3000]}\nstderr:\n{err[:3000]}\nproblems: {result.problems}")
        return 1 if result.problems else 0
    results = run.run(args.cases, args.seed, args.start, progress=True)
    print(run.summary(results))
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
