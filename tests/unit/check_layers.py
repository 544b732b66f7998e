#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layers: no two objects of one part call each other.

design.md's rule "Layers inside a folder too": the files of a folder stand
in an order where each uses only files before it.  check_docs.py reads the
calls from the sources; this check reads them from what the compiler made:
for each archive (a part's library) or set of objects (a program) given,
`nm` lists the symbols each object defines and the ones it leaves
undefined; object A uses object B when A leaves undefined a symbol B
defines.  A circle among the objects of one target (A uses B and B uses A,
or a longer ring) is reported with its members and the symbols that close
it, and the check fails.

  check_layers.py [--nm NM] TARGET...     TARGET: lib.a, or name=obj.o,obj.o,...
  check_layers.py --self-test --cc CC     compiles a pair and a ring of three
                                          and checks that each is reported
"""
import argparse
import os
import subprocess
import sys
import tempfile


def read_symbols(nm, files):
    """{object: (defined set, undefined set)} over files (archives or objects)."""
    out = subprocess.run([nm, "-A", "-g"] + files, check=True, capture_output=True,
                         text=True).stdout
    objs = {}
    for line in out.splitlines():
        # archive.a:member.o:0000 T sym, archive.a:member.o:         U sym,
        # or obj.o:0000 T sym
        head, _, rest = line.rpartition(":")
        if not head:
            continue
        parts = rest.split()
        if len(parts) == 3:
            kind, sym = parts[1], parts[2]
        elif len(parts) == 2:
            kind, sym = parts[0], parts[1]
        else:
            continue
        obj = os.path.basename(head.split(":")[-1])
        d, u = objs.setdefault(obj, (set(), set()))
        if kind == "U":
            u.add(sym)
        elif kind not in "wv":  # a weak undefined symbol is no use of another
            d.add(sym)
    return objs


def circles(objs):
    """The strongly connected components of more than one object, each as
    (sorted members, [(a, b, sym)] edges inside it)."""
    owner = {}
    for obj, (d, _) in objs.items():
        for s in d:
            owner.setdefault(s, obj)
    edges = {o: {} for o in objs}
    for obj, (_, u) in objs.items():
        for s in u:
            b = owner.get(s)
            if b is not None and b != obj:
                edges[obj].setdefault(b, s)
    # Tarjan, iterative.
    index, low, onstack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(objs):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        onstack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    onstack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in onstack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    members = sorted(comp)
                    inside = [(a, b, edges[a][b]) for a in members for b in sorted(edges[a])
                              if b in comp]
                    comps.append((members, inside))
    return comps


def check(nm, targets):
    bad = 0
    for t in targets:
        if "=" in t:
            name, objs = t.split("=", 1)
            files = [f for f in objs.split(",") if f]
        else:
            name, files = os.path.basename(t), [t]
        missing = [f for f in files if not os.path.exists(f)]
        if missing or not files:
            print(f"check_layers: {name}: no such file: {', '.join(missing) or '(none given)'}")
            return 2
        syms = read_symbols(nm, files)
        if not syms:
            print(f"check_layers: {name}: no object with a global symbol")
            return 2
        for members, inside in circles(syms):
            bad += 1
            print(f"check_layers: {name}: circle of {len(members)} objects: {' '.join(members)}")
            for a, b, s in inside:
                print(f"  {a} uses {b} ({s})")
    print(f"check_layers: {len(targets)} targets, " + (f"{bad} circles" if bad else "no circle"))
    return 1 if bad else 0


CASES = {
    "pair": {"a.c": "int b(void); int a(void) { return b(); }",
             "b.c": "int a(void); int b(void) { return 1; } int c(void) { return a(); }"},
    "ring": {"x.c": "int y(void); int x(void) { return y(); }",
             "y.c": "int z(void); int y(void) { return z(); }",
             "z.c": "int x(void); int z(void) { return x(); }"},
    "layered": {"lo.c": "int lo(void) { return 1; }",
                "mid.c": "int lo(void); int mid(void) { return lo(); }",
                "top.c": "int lo(void); int mid(void); int top(void) { return mid() + lo(); }"},
}
EXPECT = {"pair": ["a.o", "b.o"], "ring": ["x.o", "y.o", "z.o"], "layered": None}


def self_test(nm, cc):
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case, srcs in CASES.items():
            objs = []
            for fn, text in srcs.items():
                src = os.path.join(tmp, f"{case}_{fn}")
                obj = os.path.join(tmp, case, fn[:-2] + ".o")
                os.makedirs(os.path.dirname(obj), exist_ok=True)
                with open(src, "w") as f:
                    f.write(text + "\n")
                subprocess.run([cc, "-c", "-o", obj, src], check=True)
                objs.append(obj)
            lib = os.path.join(tmp, f"lib{case}.a")
            subprocess.run(["ar", "rcs", lib] + objs, check=True)
            found = circles(read_symbols(nm, [lib]))
            want = EXPECT[case]
            got = [m for m, _ in found]
            ok = (got == [] if want is None else got == [want])
            print(f"{'ok' if ok else 'not ok'}: {case}: circles {got}, expected {want or 'none'}")
            fails += not ok
            rc = check(nm, [f"{case}=" + ",".join(objs)])
            ok = rc == (0 if want is None else 1)
            print(f"{'ok' if ok else 'not ok'}: {case}: check over objects returns {rc}")
            fails += not ok
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("targets", nargs="*")
    a = ap.parse_args()
    if a.self_test:
        return self_test(a.nm, a.cc)
    if not a.targets:
        ap.error("no target given")
    return check(a.nm, a.targets)


if __name__ == "__main__":
    sys.exit(main())
