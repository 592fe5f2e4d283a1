"""Sweeps past one machine: a plan/perf sweep fanned out with Dask on a
LocalCluster of worker processes gives the same results as the sweep run
here.  Catalog handles stay in each worker; results pickle back."""
import os

import pytest

import gpuplan

distributed = pytest.importorskip("distributed")


def plan_case(case):
    """Runs in a worker process: its own catalog, a plain-value result."""
    model, gpu, gpus, mode = case
    with gpuplan.Catalog() as cat:
        p = cat.plan(model, gpu, gpus=gpus, dp_mode=mode)
        f = cat.perf(model, gpu, gpus=gpus, dp_mode=mode, global_batch=64)
    return case, p, f, os.getpid()


CASES = [(m, g, n, mode)
         for m in ("llama-2-7b", "llama-2-13b")
         for g in ("a100-40gb", "a100-80gb", "h100-sxm5-80gb", "l40s")
         for n in (8, 16)
         for mode in ("ddp", "zero3")]


def test_sweep_on_a_local_cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        futures = client.map(plan_case, CASES, pure=False)
        results = client.gather(futures)
    assert len(results) == len(CASES)
    pids = {pid for *_, pid in results}
    assert os.getpid() not in pids  # ran in the workers, not here
    with gpuplan.Catalog() as cat:
        for case, p, f, _ in results:
            model, gpu, gpus, mode = case
            assert isinstance(p, gpuplan.Result)
            assert p == cat.plan(model, gpu, gpus=gpus, dp_mode=mode)
            assert f == cat.perf(model, gpu, gpus=gpus, dp_mode=mode, global_batch=64)
    fits = {case: p.worst.fits for case, p, _, _ in results}
    # a sanity anchor: 7B under ZeRO-3 on 8 A100-80GB fits, plain DDP on 8 A100-40GB does not
    assert fits[("llama-2-7b", "a100-80gb", 8, "zero3")]
    assert not fits[("llama-2-7b", "a100-40gb", 8, "ddp")]
