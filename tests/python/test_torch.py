"""gpuplan.from_torch against PyTorch itself (issue 12, part 6).

Truth: torchvision's ResNet-50 has 25,557,032 parameters (its model card);
the activations from_torch counts on the meta device equal what PyTorch's
own saved-tensor hooks see when the same module really runs on the CPU (the
same rule: one count per storage, parameters, buffers and inputs excluded);
nn.Linear(10000, 50000) is the module of the vendored linear snapshots,
whose peaks test_snapshots.c checks.  torch and torchvision are Debian's
python3-torch / python3-torchvision (tools/setup.sh --test).
"""
import torch
import torchvision

import gpuplan


def _storage_key(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s._cdata


def _saved_bytes_cpu(module, x):
    """What autograd saves, seen by torch.autograd.graph.saved_tensors_hooks on a real CPU run."""
    skip = {_storage_key(p) for p in module.parameters()} | {_storage_key(b) for b in module.buffers()}
    skip.add(_storage_key(x))
    seen = {}

    def pack(t):
        k = _storage_key(t)
        if k not in skip:
            s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            seen[k] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x)
    return sum(seen.values())


def test_resnet50_parameters_and_saved_tensors():
    torch.manual_seed(0)
    net = torchvision.models.resnet50()
    m = gpuplan.from_torch(net, torch.randn(2, 3, 224, 224), optimizer=torch.optim.Adam(net.parameters()))
    assert m.params == 25557032
    assert m.trainable == 25557032
    assert m.options["optimizer"] == "adamw" and m.options["optimizer_impl"] == "foreach"
    # per image, exactly what the saved-tensor hooks see on a real run
    assert m.options["module_act_bytes"] * 2 == _saved_bytes_cpu(net.train(), torch.randn(2, 3, 224, 224))
    # the input batch: 3 x 224 x 224 fp32 per image
    assert m.options["module_in_bytes"] == 3 * 224 * 224 * 4
    # the user's module was not moved to the meta device
    assert next(net.parameters()).device.type == "cpu"


def test_frozen_parameters_do_not_train():
    net = torchvision.models.resnet18()
    for p in net.parameters():
        p.requires_grad_(False)
    for p in net.fc.parameters():
        p.requires_grad_(True)
    m = gpuplan.from_torch(net, torch.randn(1, 3, 64, 64))
    assert m.trainable == 512 * 1000 + 1000
    assert m.options["optimizer"] == "sgd"


def test_linear_as_the_snapshots_ran_it():
    m = gpuplan.from_torch(torch.nn.Linear(10000, 50000), torch.randn(5000, 10000))
    assert m.params == 10000 * 50000 + 50000
    assert m.options["module_in_bytes"] == 10000 * 4
    assert m.options["module_act_bytes"] == 0          # the saved tensor is the input itself
    assert m.options["module_out_bytes"] >= 50000 * 4  # the output (and the scalar loss)
    assert m.options["module_largest"] == 10000 * 50000


def test_the_seeds_question():
    """Seed 003: a ResNet-style classifier fine-tuned on one GPU, batch 32, 64, 96
    (its illustrative figures: 5.8 GB, 10.9 GB, CUDA OOM at 96).  docs/models.md
    puts these answers beside them."""
    cat = gpuplan.Catalog()
    net = torchvision.models.resnet50()
    m = gpuplan.from_torch(net, torch.randn(8, 3, 224, 224), optimizer=torch.optim.Adam(net.parameters()))
    got = {}
    for gpu in ("t4", "a10", "l4"):
        for batch in (32, 64, 96):
            p = m.plan(cat, gpu, micro_batch=batch)
            s = m.simulate(cat, gpu, micro_batch=batch, steps=3)
            got[gpu, batch] = p.worst.total_bytes
            assert p.model_source == "module" and p.impl == "eager"
            assert p.worst.verdict == "fits" and not s.oom
            # simulate's nvidia-smi figure agrees with the plan within the allocator's slack
            assert abs(s.nvidia_smi_used_bytes / p.worst.total_bytes - 1) < 0.10
    for gpu in ("t4", "a10", "l4"):
        # linear in the batch: per 224 x 224 image in fp32, the 85.3 MB autograd saves, the input,
        # and backward's working set (traced on the meta device)
        o = m.options
        per_image = o["module_act_bytes"] + o["module_in_bytes"] + o["module_out_bytes"] + o["module_bwd_bytes"]
        step = (got[gpu, 96] - got[gpu, 64]) / 32
        assert abs(step / per_image - 1) < 0.01
    # mixed precision halves the traced activations
    half = gpuplan.from_torch(net, torch.randn(8, 3, 224, 224), precision="fp16-mixed")
    assert abs(half.act_bytes_per_sample / m.act_bytes_per_sample - 0.5) < 0.01
    assert half.plan(cat, "t4", micro_batch=96).options.precision == "fp16-mixed"


def test_resnet50_against_a_published_measured_peak():
    """A published measurement: MONeT (Shah et al., ICLR 2021), README of
    github.com/utsaslab/MONeT, "Results": ResNet-50 at batch 184, "PyTorch
    15.06" (Memory (GB)), measured by examples/check_runtime_original.py as
    torch.cuda.max_memory_allocated() / 2**20 (MiB; the README's GB is that
    over 1024, GiB) over 120 iterations of ``model(x).sum().backward()`` on
    torchvision.models.resnet50() in fp32 at 224 x 224 with random input,
    PyTorch 1.5.1, no optimizer and no zero_grad (the gradients stay
    allocated between iterations), cudnn.benchmark on."""
    measured = 15.06 * 2**30
    cat = gpuplan.Catalog()
    net = torchvision.models.resnet50()
    m = gpuplan.from_torch(net, torch.randn(2, 3, 224, 224))     # no optimizer, loss = output.sum()
    assert m.options["optimizer"] == "sgd"
    p = m.plan(cat, "v100-32gb", micro_batch=184, zero_grad="zeros")
    s = m.simulate(cat, "v100-32gb", micro_batch=184, zero_grad="zeros", steps=3)
    # the allocator's peak: plan's allocated figure and simulate's max_memory_allocated()
    for predicted in (p.worst.allocated_bytes, s.peak_allocated_bytes):
        assert abs(predicted / measured - 1) < 0.15, (predicted / 2**30, predicted / measured)
    # read as 10^9 bytes instead of GiB the measurement is 7% smaller; still within 15%
    assert abs(s.peak_allocated_bytes / (15.06e9) - 1) < 0.15


def test_backward_working_set_traced():
    """Backward on the meta device, by hand: Linear(1000, 4000) -> GELU ->
    Linear(4000, 1000), fp32.  Autograd saves GELU's input h and its output g
    (4000 x 4 bytes each per sample).  Backward: the second Linear makes
    grad_g (16,000 B) while g is still saved, then frees g; GELU's backward
    makes grad_h (16,000 B) while grad_g and h live, then frees both; the
    first Linear makes only its weight's gradient (counted with the
    gradients, not here).  So the most backward adds above what is still
    saved is one 16,000-byte tensor per sample."""
    net = torch.nn.Sequential(torch.nn.Linear(1000, 4000), torch.nn.GELU(), torch.nn.Linear(4000, 1000))
    m = gpuplan.from_torch(net, torch.randn(64, 1000))
    assert m.details["backward"] == "backward traced on the meta device"
    assert m.options["module_act_bytes"] == 2 * 4000 * 4
    assert abs(m.options["module_bwd_bytes"] - 4000 * 4) < 1     # + the scalar loss's gradient, 4 B / 64
    # ResNet-50 traces too on torch 1.13 (a convolution_backward meta kernel is registered where missing)
    r = gpuplan.from_torch(torchvision.models.resnet50(), torch.randn(2, 3, 224, 224))
    assert r.details["backward"] == "backward traced on the meta device"
    # the peak comes at the last ReLU's backward: the gradient of the pooled
    # features spread back over 2048 x 7 x 7 (fp32, 401,408 B) and the ReLU's
    # input gradient (401,408 B) live, while the 2048-float features the fc
    # saved (8,192 B) are already freed; the loss's 4-byte gradient over 2 images
    assert abs(r.options["module_bwd_bytes"] - (2 * 2048 * 7 * 7 * 4 - 2048 * 4)) <= 4
