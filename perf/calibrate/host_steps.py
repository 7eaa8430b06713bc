"""FIFO steps in the host model (src/plan/host_model.cc hostFurtherSteps), for the calibration scripts.

The steps one rank sends beyond the one each hand-off carries, for fitting two-rank-measured
series (fit_host_model.py): kept in step with hostFurtherSteps by hand (the C++ is the model; this
mirrors it; host_model_choices.py asks the library itself, through cc-plan --host). The chunk's step count is read from the sources (kChunkSteps = kNumSteps / 2), the step
payloads from a calibration's steps.tsv (host_model.sh: what each class's communicator reported).
"""
import math
import os
import re

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")


def _chunk_steps():
    fifo = open(os.path.join(REPO, "src/device/fifo.h")).read()
    work = open(os.path.join(REPO, "src/collectives/coll_work.h")).read()
    num = re.search(r"kNumSteps = (\d+);", fifo)
    if not num or "kChunkSteps = kNumSteps / 2;" not in work:
        raise SystemExit("host_steps.py: kNumSteps or kChunkSteps changed shape; update host_steps.py")
    return int(num.group(1)) // 2


CHUNK_STEPS = _chunk_steps()


def read_steps(path):
    """{class: (Simple step bytes, LL step bytes)} from host_model.sh's steps.tsv."""
    steps = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 3:
            steps[parts[0]] = (int(parts[1]), int(parts[2]))
    return steps


def _steps_of(b, step):
    return max(1.0, math.ceil(b / step))


def further_steps(algo, b, n, step):
    """AllReduce with `algo` (Ring, OneShot, Direct, Tree) of b bytes on n ranks in steps of `step` bytes."""
    if n <= 1 or not step or algo == "Direct" or (algo == "OneShot" and n > 2):
        return 0.0
    if algo == "OneShot":
        return _steps_of(b, step) - 1
    if algo == "Tree":
        return 2 * (_steps_of(b, step) - 1)
    round_bytes = n * step * CHUNK_STEPS
    full = math.floor(b / round_bytes)
    rest = b - full * round_bytes
    rest_steps = _steps_of(math.ceil(rest / n), step) if rest > 0 else 0
    return max(0.0, 2.0 * (n - 1) * (full * CHUNK_STEPS + rest_steps) - 2.0 * (n - 1))
