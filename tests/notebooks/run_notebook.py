#!/usr/bin/python3
"""Execute one notebook headless (nbclient + ipykernel) with the built
gpuplan package, as CTest does for every notebook in notebooks/, and count
the figures it shows.

    run_notebook.py NOTEBOOK.ipynb [--figures N] [--save OUT.ipynb]
                    [--save-figures DIR]

The kernel runs as a headless Jupyter server's would: DISPLAY and
MPLBACKEND are removed from its environment, so matplotlib takes the
backend a kernel gives it (inline), not Agg.  Fails when a cell raises
(notebooks assert their figures), when the stored notebook carries outputs
(they are kept clean in git), or when the notebook displays fewer than N
figures (image/png outputs): a notebook that draws into a backend nobody
sees passes its asserts but shows nothing.  The kernel is this interpreter
(Debian's /usr/bin/python3, which sees python3-numpy, matplotlib and
pandas), whatever `python3` is first on PATH.
"""
import argparse
import base64
import json
import os
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient


def figures(nb):
    """(cell index, PNG bytes) for every image the notebook displayed."""
    out = []
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        for o in c.get("outputs", []):
            if o.get("output_type") in ("display_data", "execute_result") and "image/png" in o.get("data", {}):
                out.append((i, base64.b64decode(o["data"]["image/png"])))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook")
    ap.add_argument("--figures", type=int, default=None,
                    help="fail when the notebook shows fewer figures than this")
    ap.add_argument("--save", help="write the executed notebook here")
    ap.add_argument("--save-figures", help="write each figure as a PNG into this folder")
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()
    name = os.path.basename(args.notebook)

    nb = nbformat.read(args.notebook, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    if dirty:
        sys.exit("%s: cells %s carry outputs; store notebooks without outputs "
                 "(jupyter nbconvert --clear-output)" % (args.notebook, dirty))

    # What a headless Jupyter server gives a kernel: no X display, and no
    # backend chosen from outside.  Forcing Agg here would hide the very
    # failure this test exists for (figures drawn but never displayed).
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND"):
        os.environ.pop(var, None)

    # A kernelspec for this interpreter, so the kernel is not whatever
    # "python3" happens to be first on PATH.
    with tempfile.TemporaryDirectory() as jp:
        kdir = os.path.join(jp, "kernels", "gpuplan-python3")
        os.makedirs(kdir)
        with open(os.path.join(kdir, "kernel.json"), "w") as f:
            json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "gpuplan tests", "language": "python"}, f)
        os.environ["JUPYTER_PATH"] = jp
        os.environ["MPLCONFIGDIR"] = os.path.join(jp, "mpl")  # no user matplotlibrc
        t0 = time.time()
        client = NotebookClient(nb, timeout=args.timeout, kernel_name="gpuplan-python3",
                                resources={"metadata": {"path": os.path.dirname(os.path.abspath(args.notebook))}})
        client.execute()
    n = sum(1 for c in nb.cells if c.cell_type == "code")
    figs = figures(nb)
    print("%s: %d code cells ran in %.1f s, %d figures shown (cells %s)"
          % (name, n, time.time() - t0, len(figs), ", ".join(str(i) for i, _ in figs) or "none"))
    if args.save:
        nbformat.write(nb, args.save)
    if args.save_figures:
        os.makedirs(args.save_figures, exist_ok=True)
        for k, (i, png) in enumerate(figs):
            with open(os.path.join(args.save_figures, "%s-%d-cell%d.png"
                                   % (os.path.splitext(name)[0], k + 1, i)), "wb") as f:
                f.write(png)
    for i, png in figs:
        if not png.startswith(b"\x89PNG\r\n\x1a\n") or len(png) < 1000:
            sys.exit("%s: cell %d displayed an image/png that is not a drawn PNG (%d bytes)" % (name, i, len(png)))
    if args.figures is not None and len(figs) < args.figures:
        sys.exit("%s: shows %d figures, expected %d: a figure drawn but not displayed "
                 "(is a non-interactive backend such as Agg forced?)" % (name, len(figs), args.figures))


if __name__ == "__main__":
    main()
