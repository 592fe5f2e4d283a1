"""A capacity sweep fanned out with Dask: every (model, GPU, count, ZeRO
stage) answered by the workers; the results (plain values) come back by
pickle.  Runs on a LocalCluster by default, or on any Dask cluster:

    python3 sweep_dask.py                      # local worker processes
    python3 sweep_dask.py tcp://scheduler:8786 # a multi-node cluster

Every worker needs gpuplan importable (pip install --no-build-isolation
./bindings/python on each node, or a shared PYTHONPATH).
"""
import itertools
import sys

from distributed import Client, LocalCluster

import gpuplan

MODELS = ["llama-2-7b", "llama-2-13b", "llama-2-70b"]
GPUS = ["a100-40gb", "a100-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "l40s"]
COUNTS = [8, 16, 32, 64]
MODES = ["zero1", "zero3"]


def smallest_fit(model, gpu, mode):
    """In a worker: the fewest GPUs (of COUNTS) that fit, and its step time."""
    with gpuplan.Catalog() as cat:  # a handle per task: handles do not pickle
        for n in COUNTS:
            p = cat.plan(model, gpu, gpus=n, dp_mode=mode)
            if p.worst.fits:
                f = cat.perf(model, gpu, gpus=n, dp_mode=mode, global_batch=512)
                return model, gpu, mode, n, p.worst.total_bytes, f.tokens_per_s
    return model, gpu, mode, None, None, None


def main():
    address = sys.argv[1] if len(sys.argv) > 1 else None
    cluster = None if address else LocalCluster(n_workers=2, threads_per_worker=2, dashboard_address=None,
                                                silence_logs=40)
    with Client(address or cluster) as client:
        cases = list(itertools.product(MODELS, GPUS, MODES))
        rows = client.gather(client.map(lambda c: smallest_fit(*c), cases))
    if cluster:
        cluster.close()
    print(f"{'model':12s} {'gpu':16s} {'mode':6s} {'GPUs':>5s} {'GiB/GPU':>8s} {'tokens/s':>10s}")
    for model, gpu, mode, n, mem, tps in rows:
        if n:
            print(f"{model:12s} {gpu:16s} {mode:6s} {n:5d} {mem / 2**30:8.1f} {tps:10.0f}")
        else:
            print(f"{model:12s} {gpu:16s} {mode:6s}  none of {COUNTS} fit")


if __name__ == "__main__":
    main()
