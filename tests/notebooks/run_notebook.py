#!/usr/bin/python3
"""Execute one notebook headless (nbclient + ipykernel) with the built
gpuplan package, as CTest does for every notebook in notebooks/.

    run_notebook.py NOTEBOOK.ipynb [--save OUT.ipynb]

Fails when a cell raises (notebooks assert their figures) or when the
stored notebook carries outputs (they are kept clean in git).  The kernel
is this interpreter (Debian's /usr/bin/python3, which sees python3-numpy,
matplotlib and pandas), whatever `python3` is first on PATH.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook")
    ap.add_argument("--save")
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()

    nb = nbformat.read(args.notebook, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    if dirty:
        sys.exit("%s: cells %s carry outputs; store notebooks without outputs "
                 "(jupyter nbconvert --clear-output)" % (args.notebook, dirty))

    # A kernelspec for this interpreter, so the kernel is not whatever
    # "python3" happens to be first on PATH.
    with tempfile.TemporaryDirectory() as jp:
        kdir = os.path.join(jp, "kernels", "gpuplan-python3")
        os.makedirs(kdir)
        with open(os.path.join(kdir, "kernel.json"), "w") as f:
            json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "gpuplan tests", "language": "python"}, f)
        os.environ["JUPYTER_PATH"] = jp
        os.environ.setdefault("MPLBACKEND", "Agg")
        t0 = time.time()
        client = NotebookClient(nb, timeout=args.timeout, kernel_name="gpuplan-python3",
                                resources={"metadata": {"path": os.path.dirname(os.path.abspath(args.notebook))}})
        client.execute()
    n = sum(1 for c in nb.cells if c.cell_type == "code")
    print("%s: %d code cells ran in %.1f s" % (os.path.basename(args.notebook), n, time.time() - t0))
    if args.save:
        nbformat.write(nb, args.save)


if __name__ == "__main__":
    main()
