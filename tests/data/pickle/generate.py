#!/usr/bin/env python3
"""Regenerate the pickle test fixtures (run with the system python3).

  tests/data/pickle/*.pickle        bad inputs; test_pickle.c lists each with
                                     the message it must produce
  tests/fuzz/corpus/pickle/*.pickle  good inputs: the seed corpus
  stdout                             the C table of good cases for
                                     tests/unit/test_pickle.c

Every good case is checked here with a restricted Unpickler (find_class
raises), and its expected rendering is computed from what Python loads.
"""
import io
import os
import pickle
import pickletools
import random
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus", "pickle")
SNAPSHOTS = os.path.join(ROOT, "tests", "data", "torch-snapshots")


class Restricted(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s" % (module, name))


def safe_loads(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "\\q" in py2_escapes
        return Restricted(io.BytesIO(data)).load()


def esc(b):
    return "".join(chr(c) if 0x20 <= c < 0x7F and c not in b'"\\' else "\\x%02x" % c for c in b)


def render(v):
    """The same text test_pickle.c's render() produces for our values."""
    if v is None:
        return "None"
    if v is True:
        return "True"
    if v is False:
        return "False"
    if isinstance(v, int):
        return str(v - 2**64 if v >= 2**63 else v)
    if isinstance(v, float):
        return "%.17g" % v
    if isinstance(v, str):
        return 's"%s"' % esc(v.encode("utf-8", "surrogatepass"))
    if isinstance(v, (bytes, bytearray)):
        return 'b"%s"' % esc(bytes(v))
    if isinstance(v, (list, set, frozenset)):
        return "[" + ", ".join(render(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(render(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(render(k) + ": " + render(x) for k, x in v.items()) + "}"
    raise TypeError(type(v))


def c_bytes(b):
    out = []
    for c in b:
        ch = chr(c)
        if (ch.isascii() and ch.isalnum()) or ch in " ()[]{}.,:;_-+*/=<>!#%&'|~^":
            out.append(ch)
        else:
            out.append("\\%03o" % c)
    return "".join(out)


def c_str(s, width=84):
    """A C string literal split over lines."""
    parts, cur = [], ""
    i = 0
    while i < len(s):
        # never split inside an escape: \ooo or \c
        step = 1
        if s[i] == "\\":
            step = 4 if s[i + 1].isdigit() else 2
        cur += s[i:i + step]
        i += step
        if len(cur) >= width:
            parts.append(cur)
            cur = ""
    if cur or not parts:
        parts.append(cur)
    return "\n      ".join('"%s"' % p for p in parts)


# --- good cases -------------------------------------------------------------

nested = {"a": [1, (2, 3), {"b": None}], "c": (1,), "d": (1, 2, 3, 4), "e": (), "f": [], "g": {}, "h": (None, True, 1.5)}
ints = [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, -2**31 - 1,
        2**63 - 1, -2**63, 2**64 - 1, 12345678901234]
floats = [1.5, -0.0, 1e300, -2.5e-300, float("inf"), float("-inf")]
strs = ["", "abc", "h\u00e9llo \u20ac \U0001f600", "\n\\\x00\r\x1a'\"", "x" * 300]
shared = [1, 2]
memo = [shared, shared, {"k": shared}, (shared,)]
many = ["%d" % i for i in range(300)]
snapshot_like = {
    "segments": [{"device": 0, "address": 139872137560064, "total_size": 2097152,
                  "stream": 0, "segment_type": "small", "allocated_size": 512,
                  "active_size": 512, "requested_size": 400,
                  "blocks": [{"address": 139872137560064, "size": 512,
                              "requested_size": 400, "state": "active_allocated",
                              "frames": [{"filename": "a.py", "line": 2**64 - 1, "name": "f"}]}]}],
    "device_traces": [[{"action": "alloc", "addr": 139872137560064, "size": 512,
                        "stream": 0, "time_us": 1700000000000000,
                        "frames": [{"filename": "a.py", "line": 3, "name": "f"}]}]],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None, "expandable_segments": False},
}

good = []  # (name, bytes)
for proto in range(6):
    good.append(("scalars_p%d" % proto, pickle.dumps([None, True, False], protocol=proto)))
    good.append(("ints_p%d" % proto, pickle.dumps(ints, protocol=proto)))
    good.append(("floats_p%d" % proto, pickle.dumps(floats, protocol=proto)))
    good.append(("strs_p%d" % proto, pickle.dumps(strs, protocol=proto)))
    good.append(("nested_p%d" % proto, pickle.dumps(nested, protocol=proto)))
    good.append(("memo_p%d" % proto, pickle.dumps(memo, protocol=proto)))
    good.append(("snapshot_p%d" % proto, pickle.dumps(snapshot_like, protocol=proto)))
for proto in (1, 2, 4):
    good.append(("range1200_p%d" % proto, pickle.dumps(list(range(1200)), protocol=proto)))
    good.append(("dict1100_p%d" % proto, pickle.dumps({i: -i for i in range(1100)}, protocol=proto)))
    good.append(("memo300_p%d" % proto, pickle.dumps([many, many[-1], many[3]], protocol=proto)))
for proto in (3, 4, 5):
    good.append(("bytes_p%d" % proto, pickle.dumps([b"", b"\x00\xff", b"y" * 300], protocol=proto)))
good.append(("bytearray_p5", pickle.dumps([bytearray(b"ab\x00"), bytearray()], protocol=5)))
good.append(("sets_p4", pickle.dumps([{1, 2, 3}, frozenset({7}), set(), frozenset()], protocol=4)))
good.append(("bool_int_p0", b"(I01\nI00\nI7\nI-7\nl."))
good.append(("float_inf_p0", b"(lp0\nFnan\naFinf\naF-inf\naF1e-05\na."))
# Opcodes Python 3's pickler never writes for plain data.
good.append(("dup_pop", b"\x80\x02K\x01K\x02\x302\x86."))               # 1 2 POP DUP TUPLE2 -> (1, 1)
good.append(("pop_mark", b"\x80\x02K\x05(K\x01K\x021."))                 # 5 MARK 1 2 POP_MARK -> 5
good.append(("pop_empty_mark", b"\x80\x02K\x05(0."))                     # POP drops an empty MARK
good.append(("py2_strings", b"(S'a\\'b\\x41\\101\\n\\\\'\nS\"q\"\nT\x03\x00\x00\x00xyzU\x02hiS''\nt."))
good.append(("py2_escapes", b"S'\\a\\b\\f\\r\\t\\v\\q\\x4A\\x4a\\0\\1017'\n."))
good.append(("dirty_dag", b"\x80\x02]q\x00]h\x00a0Nah\x00\x86."))  # shared list, changed late
good.append(("unicode_escapes", b"(Vcaf\xe9 \\u20ac \\U0001f600 \\x\nV\\\\u0041\nV\\\\\\u0041\nl."))
good.append(("long4", b"\x80\x02(\x8b\x00\x00\x00\x00\x8b\x02\x00\x00\x00\xff\x7f\x8b\x03\x00\x00\x00\x00\x80\xff"
                      b"\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8a\x0a\x00\x00\x00\x00\x00\x00\x00\x80\xff\xff"
                      b"\x8a\x01\x80L-9223372036854775808L\nL18446744073709551615\nt."))
good.append(("binunicode8", b"\x80\x04\x95\x1f\x00\x00\x00\x00\x00\x00\x00(\x8d\x02\x00\x00\x00\x00\x00\x00\x00hi"
                            b"\x8e\x01\x00\x00\x00\x00\x00\x00\x00\x00\x96\x00\x00\x00\x00\x00\x00\x00\x00t."))
good.append(("text_memo", b"(lp0\nI1\nap1\n0g0\ng1\n\x86."))
good.append(("dict_mark", b"(dp0\nVk\np1\nI1\nsg1\nI2\nsVx\n(I3\nI4\nI5\nI6\nds(S'k'\nI9\nu."))
good.append(("dup_key", b"\x80\x02}(X\x01\x00\x00\x00kK\x01X\x01\x00\x00\x00kK\x02u."))
good.append(("append_after_get", b"\x80\x02]q\x00]q\x01h\x00a0K\x05a0h\x01."))
good.append(("scalar_root", b"\x80\x04K\x2a."))
good.append(("trailing_garbage", b"N.\xff\xff garbage"))
good.append(("depth_200", b"\x80\x02" + b"]" * 200 + b"a" * 199 + b"."))


# Too big for a literal: test_pickle.c reads them from the corpus instead.
BIG = ("range1200_", "dict1100_", "memo300_")


def check_cases():
    seen_ops = set()
    rows = []
    for name, data in good:
        v = safe_loads(data)
        seen_ops.update(op.name for op, _, _ in pickletools.genops(data))
        rows.append((name, data, render(v)))
    return rows, seen_ops


SUPPORTED = """PROTO FRAME STOP MARK POP POP_MARK DUP NONE NEWTRUE NEWFALSE INT BININT BININT1
BININT2 LONG LONG1 LONG4 FLOAT BINFLOAT STRING BINSTRING SHORT_BINSTRING UNICODE BINUNICODE
SHORT_BINUNICODE BINUNICODE8 BINBYTES SHORT_BINBYTES BINBYTES8 BYTEARRAY8 EMPTY_LIST APPEND
APPENDS LIST EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 EMPTY_DICT DICT SETITEM SETITEMS
EMPTY_SET ADDITEMS FROZENSET PUT BINPUT LONG_BINPUT MEMOIZE GET BINGET LONG_BINGET""".split()

# --- bad cases --------------------------------------------------------------


def snapshot(name):
    with open(os.path.join(SNAPSHOTS, name), "rb") as f:
        return f.read()


def bad_cases():
    lg = snapshot("linear-grad.pickle")
    assert lg[2] == 0x95
    noframe = lg[:2] + lg[11:]
    rnd = random.Random(20240613)
    garbage = bytes(rnd.randrange(256) for _ in range(512))
    l = []
    l.append(l)
    d = {}
    d["self"] = [d]
    chain = b"\x80\x02]q\x00]h\x00a0Na" + b"q\x010]h\x01a" * 200 + b"."
    return [
        ("global_os_system.pickle", b"cos\nsystem\n(S'echo hi'\ntR."),
        ("stack_global.pickle", pickle.dumps(os.system, protocol=4)),
        ("reduce.pickle", b"\x80\x02N)R."),
        ("build.pickle", b"\x80\x02}}b."),
        ("inst.pickle", b"(ios\nsystem\n."),
        ("obj.pickle", b"\x80\x02(N)o."),
        ("newobj.pickle", b"\x80\x02N)\x81."),
        ("newobj_ex.pickle", b"\x80\x04N)}\x92."),
        ("ext1.pickle", b"\x80\x02\x82\x01."),
        ("ext2.pickle", b"\x80\x02\x83\x01\x00."),
        ("ext4.pickle", b"\x80\x02\x84\x01\x00\x00\x00."),
        ("persid.pickle", b"Pfoo\n."),
        ("binpersid.pickle", b"\x80\x02NQ."),
        ("next_buffer.pickle", b"\x80\x05\x97."),
        ("readonly_buffer.pickle", b"\x80\x05N\x98."),
        ("unknown_opcode.pickle", b"\x80\x02\xff."),
        ("truncated_snapshot.pickle", lg[:1000]),
        ("truncated_noframe.pickle", noframe[:1000]),
        ("truncated_binint.pickle", b"\x80\x02J\x01\x02"),
        ("truncated_line.pickle", b"I12"),
        ("huge_binunicode8.pickle", b"\x80\x04\x8d" + (2**63).to_bytes(8, "little") + b"abc."),
        ("huge_binbytes8.pickle", b"\x80\x04\x8e" + (2**64 - 1).to_bytes(8, "little") + b"."),
        ("huge_frame.pickle", b"\x80\x04\x95" + (2**64 - 1).to_bytes(8, "little") + b"N."),
        ("negative_binstring.pickle", b"T\xff\xff\xff\xffabc."),
        ("negative_long4.pickle", b"\x80\x02\x8b\xff\xff\xff\xff."),
        ("deep_nesting.pickle", b"\x80\x02" + b"]" * 1000 + b"a" * 999 + b"."),
        ("deep_dirty.pickle", chain),
        ("memo_get_out_of_range.pickle", b"\x80\x02h\x05."),
        ("memo_put_huge_index.pickle", b"\x80\x02Nr\xff\xff\xff\xff."),
        ("memo_put_empty_stack.pickle", b"\x80\x02q\x00N."),
        ("stop_on_empty_stack.pickle", b"."),
        ("stop_two_items.pickle", b"\x80\x02NN."),
        ("stop_open_mark.pickle", b"\x80\x02N(."),
        ("empty.pickle", b""),
        ("no_stop.pickle", b"\x80\x02N"),
        ("bad_protocol.pickle", b"\x80\x06N."),
        ("long_too_large.pickle", b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."),
        ("long_too_negative.pickle", b"\x80\x02\x8a\x09\xff\xff\xff\xff\xff\xff\xff\x7f\xff."),
        ("text_long_too_large.pickle", b"L18446744073709551616L\n."),
        ("text_int_bad.pickle", b"Iabc\n."),
        ("float_bad.pickle", b"F0x1p3\n."),
        ("string_unquoted.pickle", b"Sabc\n."),
        ("string_bad_escape.pickle", b"S'\\x4'\n."),
        ("unicode_bad_escape.pickle", b"V\\u12\n."),
        ("unicode_out_of_range.pickle", b"V\\U00110000\n."),
        ("odd_setitems.pickle", b"\x80\x02}(NNNu."),
        ("odd_dict.pickle", b"(NNNd."),
        ("setitem_on_list.pickle", b"\x80\x02]NNs."),
        ("append_to_tuple.pickle", b"\x80\x02)Na."),
        ("appends_no_list.pickle", b"\x80\x02(Ne."),
        ("pop_mark_without_mark.pickle", b"\x80\x021."),
        ("tuple_without_mark.pickle", b"\x80\x02Nt."),
        ("pop_empty.pickle", b"\x80\x020N."),
        ("dup_empty.pickle", b"\x80\x022."),
        ("tuple3_underflow.pickle", b"\x80\x02(NN\x87."),
        ("recursive_list.pickle", pickle.dumps(l, protocol=2)),
        ("recursive_dict.pickle", pickle.dumps(d, protocol=4)),
        ("self_append_dup.pickle", b"\x80\x02]2a."),
        ("random_garbage.pickle", garbage),
    ]


def main():
    rows, seen_ops = check_cases()
    missing = [op for op in SUPPORTED if op not in seen_ops]
    if missing:
        sys.exit("good cases miss opcodes: %s" % missing)
    os.makedirs(CORPUS, exist_ok=True)
    for name, data, _ in rows:
        with open(os.path.join(CORPUS, name + ".pickle"), "wb") as f:
            f.write(data)
    for name in ("linear-grad.pickle", "linear-no-grad.pickle"):
        with open(os.path.join(CORPUS, name), "wb") as f:
            f.write(snapshot(name))
    for name, data in bad_cases():
        try:
            safe_loads(data)
            loaded = True
        except Exception:
            loaded = False
        # Python accepts these; we refuse them on purpose (cycles, limits,
        # int64, strict STOP, no hex floats, \x needs two digits in Python too).
        if loaded and not name.startswith(("recursive", "self_", "deep", "long_too", "text_long",
                                           "stop_two", "stop_open")):
            sys.exit("bad case %s loads in Python" % name)
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
    print("/* Generated by tests/data/pickle/generate.py: name, bytes, expected render. */")
    print("static const good_case good_cases[] = {")
    for name, data, text in rows:
        if name.startswith(BIG):
            continue  # test_pickle.c checks these from the corpus files
        print('  {"%s", %d,\n      %s,\n      %s},' % (name, len(data), c_str(c_bytes(data)), c_str(text.replace("\\", "\\\\").replace('"', '\\"'))))
    print("};")


if __name__ == "__main__":
    main()
