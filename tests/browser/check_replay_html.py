#!/usr/bin/python3
"""gpuplan replay --html in a real browser (Debian's headless chromium).

    check_replay_html.py GPUPLAN TRACES_DIR TMP_DIR

For a small exact replay, a bigger one (a trace that starts mid-run), a
what-if that runs out of memory, a file whose name is markup and
gpuplan's own snapshot of a CUDA graph capture that runs out of memory
(its private pool's segments named as such), it writes
the page, loads it in headless chromium (--dump-dom) and checks that

  - the script drew it: <body data-rendered="1">, the timeline's SVG with
    both series, one segment-map SVG per map with a rect per block;
  - the peak label names the peak the JSON document gives
    ("peak allocated 4.13 GiB at event 17", the bytes in data-bytes), and
    the page says exact / not exact as the document does;
  - the OOM case marks the OOM on the timeline and prints PyTorch's message;
  - text from the file is escaped (a file named <b id="inj">x&amp;'<i>.pickle
    makes no element), and the page fetches nothing (no src=, href=, url(),
    @import);
  - chromium logged no console message (the page logs none of its own:
    any CONSOLE line is an error or a blocked load) and no "Uncaught";
  - a screenshot of the page is a non-empty PNG.

Exit 77 (CTest's SKIP_RETURN_CODE) when chromium is not installed
(tools/setup.sh --test installs it); 1 on the first failure.
"""
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def format_size(n):
    """PyTorch's format_size (c10), as gpuplan_format_size writes it."""
    if n <= 1024:
        return "%d bytes" % n
    if n <= 1048576:
        return "%.2f KiB" % (n / 1024.0)
    if n <= 1073741824:
        return "%.2f MiB" % (n / 1048576.0)
    return "%.2f GiB" % (n / 1073741824.0)


class Dom(html.parser.HTMLParser):
    """The elements of the dumped DOM: tag counts, attributes by id, text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.by_id, self.text_of, self.tags, self.classes = {}, {}, {}, {}
        self.body = None
        self.open = []  # ids whose text is being collected
        self.segmap_rects = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for c in (a.get("class") or "").split():
            self.classes[c] = self.classes.get(c, 0) + 1
        if tag == "body":
            self.body = a
        if tag == "svg" and "segmap" in (a.get("class") or "").split():
            self.segmap_rects.append(0)
        if tag == "rect" and self.segmap_rects and (a.get("class") or "") in ("b0", "b1", "b2"):
            self.segmap_rects[-1] += 1
        if "id" in a:
            self.by_id[a["id"]] = a
            self.text_of[a["id"]] = ""
            if tag not in ("line", "circle", "path", "rect", "input", "br", "meta"):
                self.open.append((tag, a["id"]))

    def handle_endtag(self, tag):
        if self.open and self.open[-1][0] == tag:
            self.open.pop()

    def handle_data(self, data):
        for _, i in self.open:
            self.text_of[i] += data


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        fail("%s exited %d:\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def chromium_cmd(exe, profile, *extra):
    return [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--virtual-time-budget=5000", "--no-first-run", "--user-data-dir=" + profile, *extra]


def console_problems(stderr, page):
    bad = []
    for line in stderr.splitlines():
        if ":CONSOLE" in line or "Uncaught" in line:
            bad.append(line)
        elif page in line and ("ERROR" in line or "Refused" in line):
            bad.append(line)
    return bad


def check_case(exe, gpuplan, tmp, name, snapshot, args, expect_oom=False, markup_name=False, expect_text=None):
    out = os.path.join(tmp, name + ".html")
    if os.path.exists(out):
        os.unlink(out)
    doc = json.loads(run([gpuplan, "replay", snapshot, *args, "--json", "--html", out]).stdout)
    plain = json.loads(run([gpuplan, "replay", snapshot, *args, "--json"]).stdout)
    if doc.get("html") != out:
        fail("%s: the document's html is %r, not %r" % (name, doc.get("html"), out))
    doc.pop("html")
    if doc != plain:
        fail("%s: --html changed the replay's document" % name)
    if not os.path.isfile(out) or os.path.getsize(out) < 1000:
        fail("%s: no page at %s" % (name, out))
    source = open(out, encoding="utf-8").read()
    for pat in (r"\ssrc\s*=", r"\shref\s*=", r"url\(", r"@import", r"<link\b", r"<img\b", r"<iframe\b"):
        if re.search(pat, source, re.I):
            fail("%s: the page refers to something outside it (%s)" % (name, pat))

    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    try:
        p = subprocess.run(chromium_cmd(exe, profile, "--dump-dom", "file://" + out),
                           capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if p.returncode != 0:
        fail("%s: chromium exited %d:\n%s" % (name, p.returncode, p.stderr[-3000:]))
    bad = console_problems(p.stderr, os.path.basename(out))
    if bad:
        fail("%s: console messages:\n%s" % (name, "\n".join(bad)))
    d = Dom()
    d.feed(p.stdout)

    if not d.body or d.body.get("data-rendered") != "1":
        fail("%s: the script did not finish drawing (body %r)" % (name, d.body))
    for i in ("timeline-svg", "allocated-series", "reserved-series", "peak-label", "exact"):
        if i not in d.by_id:
            fail("%s: no #%s in the rendered page" % (name, i))
    maps = len(json.loads(re.search(r'id="gpuplan-data">(.*?)</script>', source, re.S).group(1))["maps"])
    if len(d.segmap_rects) != maps or not all(d.segmap_rects):
        fail("%s: %d segment maps with %r blocks drawn, the page has %d maps" % (name, len(d.segmap_rects),
                                                                                 d.segmap_rects, maps))
    label = d.text_of["peak-label"].strip()
    peak = doc["peak_allocated_bytes"]
    if int(d.by_id["peak-label"]["data-bytes"]) != peak:
        fail("%s: the peak label's bytes %s are not the document's %d" % (name, d.by_id["peak-label"]["data-bytes"], peak))
    want = "peak allocated %s at event %s" % (format_size(peak), d.by_id["peak-label"]["data-event"])
    if label != want:
        fail("%s: the peak label reads %r, expected %r" % (name, label, want))
    rl = d.text_of.get("peak-reserved-label", "").strip()
    if not rl.startswith("peak reserved %s" % format_size(doc["peak_reserved_bytes"])):
        fail("%s: the reserved peak label reads %r" % (name, rl))
    if d.by_id["exact"].get("data-exact") != ("1" if doc["exact"] else "0"):
        fail("%s: the header says exact=%s, the document %s" % (name, d.by_id["exact"].get("data-exact"), doc["exact"]))
    if expect_oom:
        if doc["oom_event"] is None:
            fail("%s: the replay did not run out of memory" % name)
        if "oom-marker" not in d.by_id:
            fail("%s: no OOM marker on the timeline" % name)
        if d.text_of.get("oom-message", "").strip() != doc["oom_message"].strip():
            fail("%s: the OOM message on the page is not the document's:\n%r\n%r" %
                 (name, d.text_of.get("oom-message"), doc["oom_message"]))
    elif "oom-marker" in d.by_id:
        fail("%s: an OOM marker without an OOM" % name)
    if markup_name:
        if "inj" in d.by_id:
            fail("%s: markup in the file name became an element" % name)
        if snapshot not in p.stdout.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace(
                "&quot;", '"').replace("&#39;", "'"):
            fail("%s: the file name is not shown as text" % name)
    if expect_text and expect_text not in p.stdout.replace("&#39;", "'"):
        fail("%s: the rendered page has no %r" % (name, expect_text))
    print("ok %-22s %s; %d map(s), %s blocks; %d bytes" % (name, label, maps, d.segmap_rects, len(source)))
    return out


def screenshot(exe, tmp, page):
    png = os.path.join(tmp, "replay-html.png")
    if os.path.exists(png):
        os.unlink(png)
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    try:
        p = subprocess.run(chromium_cmd(exe, profile, "--hide-scrollbars", "--window-size=1040,1500",
                                        "--screenshot=" + png, "file://" + page),
                           capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if p.returncode != 0 or not os.path.isfile(png):
        fail("screenshot: chromium exited %d:\n%s" % (p.returncode, p.stderr[-3000:]))
    data = open(png, "rb").read()
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or len(data) < 10000:
        fail("screenshot: %s is not a non-empty PNG (%d bytes)" % (png, len(data)))
    print("ok screenshot            %s, %d bytes" % (png, len(data)))


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    gpuplan, traces, tmp = sys.argv[1:]
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        print("SKIP: chromium is not installed (tools/setup.sh --test installs it)")
        return SKIP
    tmp = os.path.join(tmp, "browser")
    os.makedirs(tmp, exist_ok=True)
    small = os.path.join(traces, "linear-grad.pickle")
    page = check_case(exe, gpuplan, tmp, "linear-grad", small, [])
    check_case(exe, gpuplan, tmp, "cs336-small-forward", os.path.join(traces, "cs336-small-forward.pickle"), [])
    check_case(exe, gpuplan, tmp, "linear-grad-oom", small, ["--capacity", "3500"], expect_oom=True)
    odd = os.path.join(tmp, "<b id=\"inj\">x&amp;'<i>.pickle")
    shutil.copyfile(small, odd)
    check_case(exe, gpuplan, tmp, "markup-name", odd, [], markup_name=True)
    # gpuplan's own snapshot of a CUDA graph capture that runs out of memory
    # (GPT-2 at micro-batch 8 on a T4): exact, the OOM inside the capture,
    # the graph's segments drawn as its private pool's.
    graph = os.path.join(tmp, "graph-capture.pickle")
    run([gpuplan, "simulate", "gpt-2", "--gpu", "t4", "--micro-batch", "8", "--steps", "2", "--cuda-graph",
         "--snapshot", graph])
    check_case(exe, gpuplan, tmp, "cuda-graph-capture", graph, [], expect_oom=True,
               expect_text="blocks of private pool 1 (a CUDA graph's or a MemPool's)")
    screenshot(exe, tmp, page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
