"""gpuplan.torch: describe any ``torch.nn.Module`` to gpuplan.

    >>> import torch, torchvision, gpuplan
    >>> m = gpuplan.from_torch(torchvision.models.resnet50(), torch.randn(8, 3, 224, 224),
    ...                        optimizer=torch.optim.Adam)
    >>> m.params
    25557032
    >>> cat = gpuplan.Catalog()
    >>> cat.plan(m.name, "t4", micro_batch=64, **m.options).worst.verdict   # doctest: +SKIP
    'fits'

``from_torch`` runs the module once on PyTorch's *meta* device: tensors have
shapes and dtypes but no storage, so nothing is allocated and no GPU (or
weights) is needed.  It records

* the parameters (trainable or frozen), buffers and the largest parameter
  tensor;
* every tensor autograd saves for backward, with PyTorch's own
  saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``), counted
  once per storage, parameters and inputs excluded: the activations;
* the order of allocations and frees in forward and backward (a
  ``TorchDispatchMode`` that sees every ATen op), which gives the forward's
  temporaries above the saved tensors and backward's working set above what
  is still saved (the parameters' gradients left out: they are counted on
  their own).  torch 1.13 lacks a meta kernel for convolution_backward;
  gpuplan registers one (the gradients have their inputs' shapes) where the
  dispatcher has none; where another kernel is missing the working set is
  estimated as two copies of the largest saved tensor, and said so;
* the optimizer (its states and how its step runs).

The result's ``options`` are the library's ``module_*`` options (and
``optimizer``, ``optimizer_impl``, ``precision``): ``Catalog.plan`` and
``Catalog.simulate`` take them like any other, from Python, the CLI
(``--module-params ...``) or Lua.  Sizes per sample scale with
``micro_batch``.  Mixed precision is traced on a 16-bit copy of the module
(what autocast does to convolution and matmul outputs); norms and losses
autocast keeps in fp32 are then counted in 16-bit, which the description
says.
"""
import copy
import weakref

__all__ = ["from_torch", "TorchModel"]


def _torch():
    try:
        import torch  # noqa: F401
    except ImportError as e:  # pragma: no cover - the binding works without torch
        raise ImportError("gpuplan.from_torch needs PyTorch (Debian: python3-torch)") from e
    return torch


def _storage_key(t):
    """One key per storage (views share it)."""
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s._cdata


def _storage_nbytes(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return int(s.nbytes())


def _tensors(obj):
    torch = _torch()
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


def _to_meta(obj, dtype=None):
    torch = _torch()
    if isinstance(obj, torch.Tensor):
        d = dtype if (dtype is not None and obj.is_floating_point()) else obj.dtype
        return torch.empty(obj.shape, dtype=d, device="meta", requires_grad=obj.requires_grad)
    if isinstance(obj, tuple):
        return tuple(_to_meta(x, dtype) for x in obj)
    if isinstance(obj, list):
        return [_to_meta(x, dtype) for x in obj]
    if isinstance(obj, dict):
        return {k: _to_meta(v, dtype) for k, v in obj.items()}
    return obj


def _optimizer_options(optimizer):
    """gpuplan's optimizer and optimizer_impl for a torch.optim optimizer (instance, class or name)."""
    if optimizer is None:
        return {"optimizer": "sgd"}, "none given: plain SGD (no optimizer state)"
    if isinstance(optimizer, str):
        return {"optimizer": optimizer}, optimizer
    cls = optimizer if isinstance(optimizer, type) else type(optimizer)
    name = cls.__name__.lower()
    defaults = getattr(optimizer, "defaults", {}) if not isinstance(optimizer, type) else {}
    impl = "foreach"
    if defaults.get("fused"):
        impl = "fused"
    elif defaults.get("foreach") is False:
        impl = "for-loop"
    if "8bit" in name:
        return {"optimizer": "adam8bit"}, cls.__name__
    if "adafactor" in name:
        return {"optimizer": "adafactor"}, cls.__name__
    if "adam" in name:
        return {"optimizer": "adamw", "optimizer_impl": impl}, cls.__name__
    if name == "sgd":
        momentum = defaults.get("momentum", 0) or 0
        return ({"optimizer": "momentum", "optimizer_impl": impl} if momentum else {"optimizer": "sgd"}), cls.__name__
    raise ValueError("gpuplan.from_torch: optimizer %s is not one gpuplan models (Adam, AdamW, SGD, 8-bit Adam, "
                     "Adafactor); give optimizer='adamw' or similar" % cls.__name__)


class TorchModel:
    """A module as gpuplan sees it: ``options`` for ``Catalog.plan`` / ``Catalog.simulate``.

    ``cat.plan(m.name, gpu, **m.options)``, or ``m.plan(cat, gpu, micro_batch=64)``.
    Per-sample figures are in bytes.
    """

    def __init__(self, name, options, details):
        self.name = name
        self.options = dict(options)
        self.details = dict(details)

    params = property(lambda self: int(self.options["module_params"]))
    trainable = property(lambda self: int(self.options["module_trainable"]))
    act_bytes_per_sample = property(lambda self: self.options["module_act_bytes"])

    def plan(self, catalog, gpu=None, **options):
        """``catalog.plan`` with this module's options (yours win)."""
        return catalog.plan(self.name, gpu, **{**self.options, **options})

    def simulate(self, catalog, gpu=None, **options):
        """``catalog.simulate`` with this module's options (yours win)."""
        return catalog.simulate(self.name, gpu, **{**self.options, **options})

    def __repr__(self):
        return "TorchModel(%r, params=%d, act_bytes_per_sample=%.0f)" % (
            self.name, self.params, self.act_bytes_per_sample)


class _Live:
    """Bytes of the storages created by ATen ops and still alive, and the
    order they came and went in (``log``: storage serial, +bytes or -bytes)."""

    def __init__(self, ignore=()):
        self.ignore = set(ignore)  # storages that exist before the trace (parameters, buffers, inputs)
        self.refs = {}   # storage key -> [bytes, live tensor objects, serial]
        self.bytes = 0
        self.peak = 0
        self.serial = 0
        self.log = []

    def add(self, t):
        key = _storage_key(t)
        if key in self.ignore:
            return  # a view of a parameter (W.t()), a buffer or the input: not a new allocation
        ent = self.refs.get(key)
        if ent is None:
            self.serial += 1
            ent = self.refs[key] = [_storage_nbytes(t), 0, self.serial]
            self.bytes += ent[0]
            self.log.append((ent[2], ent[0]))
            if self.bytes > self.peak:
                self.peak = self.bytes
        ent[1] += 1
        weakref.finalize(t, self._drop, key)

    def _drop(self, key):
        ent = self.refs.get(key)
        if ent is None:
            return
        ent[1] -= 1
        if ent[1] <= 0:
            self.bytes -= ent[0]
            self.log.append((ent[2], -ent[0]))
            del self.refs[key]

    def peak_since(self, mark, start, leave_out):
        """The most bytes above ``start`` after log entry ``mark``, leaving
        out the storages whose serial is in ``leave_out``."""
        cur, peak = start, 0
        for serial, b in self.log[mark:]:
            if serial in leave_out:
                continue
            cur += b
            peak = max(peak, cur - start)
        return peak


# Meta kernels torch 1.13 lacks for backward (torch 2 has them): the shapes
# of the gradients convolution_backward returns are its inputs' (ATen's
# native_functions.yaml: grad_input like input, grad_weight like weight,
# grad_bias of bias_sizes).  Registered once per process, only where the
# dispatcher has none.
_META_LIB = []


def _meta_backward_kernels():
    torch = _torch()
    if _META_LIB or int(torch.__version__.split(".")[0]) >= 2:
        return

    def conv_bwd(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
                 groups, output_mask):
        gi = torch.empty_like(input) if output_mask[0] else None
        gw = torch.empty_like(weight) if output_mask[1] else None
        gb = (torch.empty(bias_sizes, dtype=grad_output.dtype, device=grad_output.device)
              if output_mask[2] and bias_sizes is not None else None)
        return gi, gw, gb

    lib = torch.library.Library("aten", "IMPL", "Meta")
    lib.impl("convolution_backward", conv_bwd)
    _META_LIB.append(lib)


def _mode(live):
    from torch.utils._python_dispatch import TorchDispatchMode
    torch = _torch()

    class Track(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in _tensors(out):
                if isinstance(t, torch.Tensor) and t.device.type == "meta":
                    live.add(t)
            return out

    return Track()


def from_torch(module, example_inputs, optimizer=None, loss_fn=None, precision="fp32", name=None):
    """Describe ``module`` to gpuplan by running it once on the meta device.

    ``example_inputs``: a tensor, a tuple/list of positional inputs, or a dict
    of keyword inputs; their first dimension is the batch (per-sample
    figures divide by it).  ``optimizer``: a ``torch.optim`` optimizer (or its
    class, or a gpuplan name such as ``"adamw"``); ``None`` is plain SGD.
    ``loss_fn(output)`` gives the loss (default: the output's sum, which keeps
    nothing).  ``precision``: ``"fp32"``, ``"bf16-mixed"`` or ``"fp16-mixed"``.
    Returns a :class:`TorchModel`.  Nothing is allocated on any device; the
    module is not changed (a meta copy is traced).
    """
    torch = _torch()
    if precision not in ("fp32", "bf16-mixed", "fp16-mixed"):
        raise ValueError("precision: fp32, bf16-mixed or fp16-mixed")
    lowp = {"fp32": None, "bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}[precision]
    params = list(module.parameters())
    n_params = sum(p.numel() for p in params)
    n_train = sum(p.numel() for p in params if p.requires_grad)
    largest = max((p.numel() for p in params), default=0)
    buffers = sum(b.numel() * b.element_size() for b in module.buffers())
    if n_params < 1:
        raise ValueError("gpuplan.from_torch: the module has no parameters")
    # A meta copy: shapes without storage (the user's module is left alone).
    if all(p.device.type == "meta" for p in params):
        m = copy.deepcopy(module)
    else:
        m = copy.deepcopy(module).to("meta")
    if lowp is not None:
        m = m.to(lowp)
    m.train()
    if isinstance(example_inputs, dict):
        args, kwargs = (), _to_meta(example_inputs, lowp)
    elif isinstance(example_inputs, (tuple, list)):
        args, kwargs = tuple(_to_meta(example_inputs, lowp)), {}
    else:
        args, kwargs = (_to_meta(example_inputs, lowp),), {}
    inputs = list(_tensors((args, kwargs)))
    if not inputs or inputs[0].dim() < 1:
        raise ValueError("gpuplan.from_torch: example_inputs needs a tensor with a batch dimension")
    batch = int(inputs[0].shape[0])
    if batch < 1:
        raise ValueError("gpuplan.from_torch: the batch dimension is empty")
    skip = {_storage_key(p) for p in m.parameters()} | {_storage_key(b) for b in m.buffers()}
    skip |= {_storage_key(t) for t in inputs}
    # the batch as the loader gives it (autocast leaves the input in its dtype)
    orig = {id(t): t for t in _tensors(example_inputs)}
    in_bytes = sum(t.numel() * t.element_size() for t in orig.values())

    saved = {}

    def pack(t):
        key = _storage_key(t)
        if key not in skip:
            saved[key] = _storage_nbytes(t)
        return t

    live = _Live(skip)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with _mode(live):
            out = m(*args, **kwargs)
            if loss_fn is not None:
                loss = loss_fn(out)
            else:
                outs = [t for t in _tensors(out) if t.is_floating_point()]
                loss = sum(t.float().sum() for t in outs)
    fwd_peak = live.peak
    act = sum(saved.values())
    out_keys = {_storage_key(t) for t in _tensors(out)} | {_storage_key(loss)}
    out_bytes = sum(live.refs.get(k, [0])[0] for k in out_keys)
    end = live.bytes
    fwd_extra = max(0, fwd_peak - end)
    # Backward, on the meta device: the most bytes it holds above what is
    # still saved, leaving out the parameters' .grad (counted on their own).
    note = "backward traced on the meta device"
    bwd_extra = None
    if n_train:
        _meta_backward_kernels()
        mark, start = len(live.log), live.bytes
        try:
            with _mode(live):
                loss.backward()
            grads = set()
            for p in m.parameters():
                ent = live.refs.get(_storage_key(p.grad)) if p.grad is not None else None
                if ent is not None:
                    grads.add(ent[2])
            bwd_extra = live.peak_since(mark, start, grads)
        except (NotImplementedError, RuntimeError) as e:
            note = ("backward's working set estimated as two copies of the largest saved tensor "
                    "(no meta kernel: %s)" % str(e).split(":")[0][:80])
    if bwd_extra is None:
        bwd_extra = 2 * max(saved.values(), default=0)
        if not n_train:
            note = "no trainable parameters: no backward"
    opt, opt_name = _optimizer_options(optimizer)
    options = {
        "module_params": float(n_params),
        "module_trainable": float(n_train),
        "module_buffers": float(buffers),
        "module_largest": float(largest),
        "module_act_bytes": act / batch,
        "module_fwd_bytes": fwd_extra / batch,
        "module_bwd_bytes": bwd_extra / batch,
        "module_out_bytes": out_bytes / batch,
        "module_in_bytes": in_bytes / batch,
        "precision": precision,
        "micro_batch": batch,
    }
    options.update(opt)
    details = {
        "batch_traced": batch,
        "saved_tensors": len(saved),
        "saved_bytes": act,
        "forward_peak_bytes": fwd_peak,
        "optimizer": opt_name,
        "backward": note,
        "precision": precision if lowp is None else precision + " (traced on a 16-bit copy: autocast's fp32 norms "
                                                              "and losses are counted in 16-bit)",
    }
    return TorchModel(name or type(module).__name__, options, details)
