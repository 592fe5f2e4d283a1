"""gpuplan: plan GPU memory and simulate training on models of real hardware.

The C library does the work (``gpuplan._gpuplan``); this layer gives results
attributes, ``to_dict()`` and pandas helpers.  Results are plain values:
they pickle, and they cross process boundaries (Dask, multiprocessing).

    >>> import gpuplan
    >>> cat = gpuplan.Catalog()
    >>> p = cat.plan("llama-2-7b", "a100-40gb")
    >>> p.worst.fits, round(p.worst.total_bytes / 2**30, 1)
    (False, 118.6)
    >>> p.ladder[-1].change
    'ZeRO-3 across 4 GPUs'

Every result has the keys of the matching ``gpuplan ... --json`` document.
"""
import errno as _errno
import os as _os
from ._gpuplan import (  # noqa: F401
    AmbiguousError,
    CatalogError,
    Error,
    InvalidError,
    NotFoundError,
    OutOfMemoryError,
    StorageError,
    UnsupportedError,
    __version__,
)
from ._gpuplan import Catalog as _Catalog
from ._gpuplan import Document
from ._gpuplan import options, result_fields, result_kinds  # noqa: F401
from ._gpuplan import _register
from .torch import from_torch  # noqa: F401  (gpuplan.torch: any torch.nn.Module, traced on the meta device)

__all__ = [
    "Catalog", "Result", "Document", "replay", "explain_oom", "to_dataframe",
    "options", "result_fields", "result_kinds",
    "Error", "NotFoundError", "AmbiguousError", "InvalidError", "UnsupportedError",
    "StorageError", "CatalogError", "OutOfMemoryError", "__version__",
]


class Result:
    """A result: attribute access over a dict of plain values.

    Nested dicts become Results and lists of dicts lists of Results;
    ``to_dict()`` gives the plain data back.  Results compare by value and
    pickle with every protocol.
    """

    __slots__ = ("_d",)

    def __init__(self, d):
        object.__setattr__(self, "_d", dict(d))

    def __getattr__(self, name):
        try:
            v = self._d[name]
        except KeyError:
            raise AttributeError(name) from None
        return _wrap(v)

    def __getitem__(self, name):
        return _wrap(self._d[name])

    def __setattr__(self, name, value):
        raise AttributeError("gpuplan results are read-only")

    def keys(self):
        return self._d.keys()

    def get(self, name, default=None):
        """The value of name, or default when the result has no such key
        (JSON null: a value the library could not determine)."""
        v = self._d.get(name, default)
        return default if v is None else _wrap(v)

    def __contains__(self, name):
        return name in self._d

    def __iter__(self):
        return iter(self._d)

    def to_dict(self):
        return _plain(self._d)

    def __eq__(self, other):
        if isinstance(other, (Result, Document)):
            return self._d == other.to_dict()
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        inner = ", ".join("%s=%r" % (k, v) for k, v in list(self._d.items())[:6])
        return "Result(%s%s)" % (inner, ", ..." if len(self._d) > 6 else "")

    def __reduce__(self):
        return (Result, (self._d,))

    def __dir__(self):
        return list(self._d)


def _wrap(v):
    if isinstance(v, dict):
        return Result(v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


def _plain(v):
    if isinstance(v, Result):
        return v.to_dict()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


_KINDS = {"gpus": "gpu", "nodes": "node", "models": "model", "fabrics": "fabric"}
_default_lock = __import__("threading").Lock()
_default_catalog = []


def _default():
    """The built-in catalog, opened once, for the module-level functions."""
    with _default_lock:
        if not _default_catalog:
            _default_catalog.append(Catalog())
        return _default_catalog[0]


class Catalog(_Catalog):
    """The hardware and model catalog, and the planners that use it.

    ``Catalog()`` opens the built-in catalog; ``Catalog(path=...)`` a user
    file instead; ``Catalog(layer=...)`` a user file over the built-in one.
    One lock per catalog makes the methods thread-safe; every command runs
    without the GIL, and ``close()`` waits for a running one.

    Every command is ``run(command, **options)``; ``plan``, ``perf``,
    ``search`` and ``simulate`` take the model (and GPU) positionally.
    Keyword arguments are the library's option names, the same as the CLI's
    flags (``gpuplan.options()`` lists them with types, ranges and help):
    ``gpu``, ``gpus``, ``node``, ``nodes``, ``tp``, ``pp``, ``dp``, ``zero``,
    ``fsdp``, ``micro_batch``, ``seq_len``, ``precision``, ... Each call
    returns a Result: a read-only view of the library's document, the same
    document as ``gpuplan <command> --json`` (``result.json()``).
    """

    def __reduce_ex__(self, protocol):
        raise TypeError("gpuplan.Catalog is a handle and cannot be pickled; pickle its results")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # records: the catalog command's documents
    def catalog(self, subcommand, **options):
        """``gpuplan catalog SUBCOMMAND --json``: "gpus", "nodes", "models",
        "fabrics" (``rows``), "show" (``record``; with ``name``, optionally
        ``kind``) or "info"."""
        return self.run("catalog", subcommand=subcommand, **options)

    def gpus(self):
        """Every GPU SKU (``gpuplan catalog gpus --json``'s rows)."""
        return self.run("catalog", subcommand="gpus").rows

    def nodes(self):
        """Every node / cloud VM."""
        return self.run("catalog", subcommand="nodes").rows

    def models(self):
        """Every model."""
        return self.run("catalog", subcommand="models").rows

    def fabrics(self):
        """Every interconnect (NVLink, PCIe, InfiniBand, Ethernet)."""
        return self.run("catalog", subcommand="fabrics").rows

    def find(self, kind, name):
        """One record by id, name or alias (raises NotFoundError/AmbiguousError)."""
        return self.run("catalog", subcommand="show", kind=_KINDS.get(kind, kind), name=name).record

    def explain_oom(self, message):
        """Read a PyTorch out-of-memory message (``gpuplan explain-oom --json``)."""
        return self.run("explain-oom", message=message)

    def replay(self, path, **options):
        """Replay a torch memory snapshot (``gpuplan replay FILE --json``); options
        as the command's: ``alloc_conf``, ``capacity`` (as ``gpuplan.replay``
        reads it: an int is bytes, a str the CLI's text, "18700" MiB or "40GiB"),
        ``gpu``, ``device``, ``timeline``, ``summary``, ``memory_stats`` (torch.cuda.memory_stats()'s
        keys and values at the end), ``torch``."""
        if isinstance(path, (bytes, bytearray, memoryview)):
            return self.replay_bytes(bytes(path), **options)
        return self.run("replay", file=_os.fspath(path), **_capacity_option(options))

    def replay_bytes(self, data, **options):
        """Replay a snapshot held in memory (Dask workers, uploads); options as
        ``replay``'s, ``capacity`` read the same way (an int is bytes)."""
        return _Catalog.replay_bytes(self, data, **_capacity_option(options))

    # planners: plan, perf, search, simulate and run come from the C type
    def fits(self, model, gpu=None, **options):
        """True when the worst rank fits in the GPU's memory."""
        return self.plan(model, gpu, **options).worst.fits

    def smi(self, **options):
        """The nvidia-smi view (``gpuplan smi --json``): this machine's GPUs (CUDA
        driver and NVML loaded at run time) or ``sim="a100-80gb:8"`` mock GPUs
        with ``fault=["thermal@3", "ecc"]``, ``load``, ``busy``, ``mem_fraction``,
        ``job`` (a simulated training job), queries (``query_gpu``)..."""
        return self.run("smi", **options)

    def topo(self, **options):
        """A node's GPU/NIC matrix and rank placement (``gpuplan topo --json``)."""
        return self.run("topo", **options)

    def doctor(self, **options):
        """Check a GPU environment (``gpuplan doctor --json``): findings with fixes."""
        return self.run("doctor", **options)

    def devices(self, sim=None, faults=(), load=None, busy=None, mem=None, **options):
        """The GPUs of ``smi()`` (its ``gpus``): this machine's, or ``sim`` mock GPUs
        with ``faults`` such as ``["thermal", "ecc@1"]`` after ``load`` seconds of
        training (busy fraction ``busy``, PyTorch cache ``mem`` of the free
        memory).  Without a driver: UnsupportedError, as nvidia-smi fails."""
        if isinstance(faults, str):
            faults = [faults]
        doc = self.run("smi", sim=sim, fault=list(faults) or None, load=load, busy=busy, mem_fraction=mem,
                       **options)
        if not doc.driver.available:
            raise UnsupportedError(doc.driver.error)
        return doc.gpus


def _capacity_option(options):
    """options with a replay's capacity as the option's text: one reading for
    every replay (an int was MiB in Catalog.replay and bytes in
    gpuplan.replay: capacity=18700 * 2**20 made an 18 TiB card)."""
    if options.get("capacity") is not None:
        options["capacity"] = _capacity_bytes(options["capacity"])
    return options


def _capacity_bytes(capacity):
    """replay()'s capacity as the option's text: an int (or an integral
    float) is bytes, a str is the CLI's (MiB unless it names a unit)."""
    if isinstance(capacity, str):
        return capacity
    if isinstance(capacity, bool) or not isinstance(capacity, (int, float)):
        raise TypeError("capacity: bytes as an int, or a size as a str ('18700' MiB, '40GiB'); got %s"
                        % type(capacity).__name__)
    if isinstance(capacity, float) and not (capacity == capacity and capacity not in (float("inf"), float("-inf"))
                                            and capacity.is_integer()):
        raise InvalidError("capacity: %r is not a whole number of bytes" % capacity)
    if capacity < 1 << 20:
        raise InvalidError("capacity: %d bytes is less than the least capacity, 1 MiB (1048576 bytes: an int is "
                           "bytes, a str the CLI's '18700' MiB or '40GiB'); leave it out for an unlimited device"
                           % capacity)
    return "%dB" % int(capacity)


def replay(path, alloc_conf=None, capacity=None, device=None, gpu=None, catalog=None, timeline=None, **options):
    """Replay a torch.cuda.memory._dump_snapshot() pickle (``gpuplan replay --json``).

    With ``alloc_conf`` (PYTORCH_CUDA_ALLOC_CONF) or a device ``capacity``
    (an int: bytes; a str: as ``gpuplan replay --capacity`` reads it,
    "18700" MiB or "40GiB"), the same program runs under other settings
    (what-if);
    ``gpu="a100-40gb"`` sets the capacity to the SKU's memory less its CUDA
    context, as ``gpuplan replay --gpu``.  ``timeline=True`` adds the
    allocated and reserved bytes after every event, for plotting.  Releases
    the GIL.
    """
    if not isinstance(path, (bytes, bytearray)) and not _os.path.exists(path):  # the builtin a Python user catches
        raise FileNotFoundError(_errno.ENOENT, _os.strerror(_errno.ENOENT), _os.fspath(path))
    cat = catalog if catalog is not None else _default()
    return cat.replay(path, alloc_conf=alloc_conf, capacity=capacity, device=device, gpu=gpu, timeline=timeline,
                      **options)


def explain_oom(text):
    """Read a PyTorch OutOfMemoryError message (``gpuplan explain-oom``)."""
    return _default().explain_oom(text)


_register(Result)


def to_dataframe(results, flatten=True):
    """A pandas DataFrame of results (needs pandas; ImportError without it).

    ``results`` is a list of Results or dicts (``cat.gpus()``,
    ``cat.search(...).best``), or one plan result (its components, one row
    each).  Nested dicts flatten into ``outer.inner`` columns.
    """
    import pandas as pd  # imported on demand: pandas is optional

    if isinstance(results, (Result, Document)) and "worst" in results.keys():
        return pd.DataFrame(results.worst.to_dict()["components"])
    if isinstance(results, (Result, Document)) and "best" in results.keys():
        results = results.best
    rows = [r.to_dict() if isinstance(r, (Result, Document)) else dict(r) for r in results]
    return pd.json_normalize(rows) if flatten else pd.DataFrame(rows)
