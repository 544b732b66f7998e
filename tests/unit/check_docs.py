#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The docs against the code (ctest -R docs_match_code).

    check_docs.py [--root DIR]        check docs/design.md, CONTRIBUTING.md and
                                      README.md's Development section
    check_docs.py --self-test         show that each check fails on a wrong doc

What the documents state is checked against the tree, so that a change of
the code that makes them wrong fails here until they are made true:

  numbers    a number written next to a constant's name, "3 s
             (`CTL_DRAIN_MAX_MS`)", "`SCHEMA_VERSION` (3)" or "256 KiB,
             `DEFAULT_RESERVE_BYTES`", equals the constant's #define (the
             unit converted: a name ending _MS is in ms, _S in seconds,
             a size in KiB or MiB is compared in bytes);
  names      every `name` in backticks that looks like a C identifier
             (snake_case with an underscore, or an UPPER_CASE constant, a
             trailing * a prefix) occurs in the tree's code, scripts or build
             files, or is one of EXTERNAL below (named, with why);
  files      every `path/file.c` or `folder/` in backticks exists; in a
             folder's row of design.md's parts table, or its item of the
             list of files under it ("- `folder/`: ..."), a bare `file.c`
             is that folder's;
  coverage   the row and the item of a folder together name every .c file
             under it, every public header (include/*.h) and every folder
             in it (tests/ and docs/: their folders only); an item that
             says "from the bottom up" names the .c files in an order where
             none calls a function of a file named after it; every folder of
             the tree with sources has a row; a header's own file map
             (" *   file.c  what it holds" lines in a private header) names
             files that exist and every .c file of its folder;
  uses       the parts table's "may use" cell of a folder names every part
             whose public header its sources include (or says "all of the
             above") and every library whose header they include, and no
             other; each of those parts has its row above it: dependencies
             point down the table;
  references a comment of the code that sends the reader to a part of a
             header, (x.h, "Title") or x.h "Title", names a header of the
             tree that has that title;
  locks      each mutex and rwlock the code declares is named, with the file
             that declares it, in one paragraph or list item of design.md's
             "Threads and locks";
  order      a paragraph or list item that says "in the order of `func`"
             names, in backticks, functions that func calls (itself or
             through the functions of the tree it calls), in the order they
             are first called;
  cells      no cell of a design.md table is over 400 characters (a longer
             one is prose under its table);
  layout     README.md's Development section names every folder of the tree
             with sources; what it and CONTRIBUTING.md name exists.

Exit 0 with "ok: ..." when every check holds; 1 with one line per problem
(file:line: what is wrong).
"""
import argparse
import copy
import os
import re
import sys
import tempfile

# Names the documents use that are not the code's: each with its source.
EXTERNAL = {
    "SQLITE_FCNTL_CHUNK_SIZE": "sqlite3.h: the alternative the reserve file is weighed against",
    "sqlite_sequence": "SQLite's own table of AUTOINCREMENT counters",
    "dh_installsystemd": "debhelper's tool, whose way the package's postinst follows",
}
# A library's header, and how the parts table names the library.
LIBRARIES = {"sqlite3.h": "sqlite3", "fuse_lowlevel.h": "libfuse3", "fuse.h": "libfuse3",
             "curl/curl.h": "libcurl", "jansson.h": "jansson", "ini.h": "inih"}
# Folders of the mount the documents show (<mnt>/plugins/...), not of the tree.
MOUNT_DIRS = {"plugins", "allocs"}
# Folders of the tree that are not sources.
NOT_SOURCES = {"build", ".git", ".ci"}
# Folders whose row names their folders, not every file (tests, docs).
FOLDERS_ONLY = {"tests", "docs", "contrib", "cmake"}
CELL_MAX = 400
CODE_EXT = (".c", ".h")
TEXT_EXT = CODE_EXT + (".sh", ".py", ".cmake", ".txt", ".in", ".service", ".ini", ".timer",
                       ".supp", ".zsh", ".bash", ".hcl")
PATH_EXT = CODE_EXT + (".md", ".sh", ".py", ".json", ".cmake", ".txt", ".ini", ".service",
                       ".in", ".supp", ".timer", ".8", ".5", ".1")


def skip_dir(name):
    return name in NOT_SOURCES or name.startswith(".") or name.startswith("build")


class Tree:
    """What the checks need of the tree: its files, its words, its constants."""

    def __init__(self, root):
        self.root = root
        self.files = set()  # relative paths
        self.words = set()
        self.defines = {}  # name -> value text
        self.locks = []  # (relative path, name)
        self.bodies = {}  # function -> [(file, static, body)], in the C sources
        self.exported = {}  # function -> the .c file that defines it, not static
        self.called = {}  # .c file -> the names it calls
        self.includes = {}  # top folder -> {header named by its #include}
        self.texts = {}  # relative path -> text, of the C sources and headers
        for d, dirs, files in os.walk(root):
            if "CMakeCache.txt" in files or "CMakeFiles" in dirs and d != root:
                dirs[:] = []  # a build tree, whatever its name
                continue
            dirs[:] = sorted(x for x in dirs if not skip_dir(x))
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), root)
                self.files.add(rel)
                # Not this file: it names wrong things on purpose (the self-test).
                if (f.endswith(TEXT_EXT) or f == "CMakeLists.txt" or "." not in f) and \
                        f != os.path.basename(__file__):
                    self._read(rel)
        self.dirs = {os.path.dirname(f) for f in self.files}
        for f in list(self.dirs):
            while f:
                f = os.path.dirname(f)
                self.dirs.add(f)

    def _read(self, rel):
        try:
            with open(os.path.join(self.root, rel), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            return
        if rel.endswith(CODE_EXT):
            self.texts[rel] = text
            top = rel.split(os.sep)[0]
            inc = self.includes.setdefault(top, set())
            inc.update(re.findall(r'^[ \t]*#[ \t]*include[ \t]*[<"]([\w./]+)[>"]', text, re.M))
            for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+(.*?)[ \t]*(?:/\*.*)?$",
                                 text, re.M):
                self.defines.setdefault(m.group(1), m.group(2))
            if top not in ("tests", "tools"):
                for m in re.finditer(r"\bpthread_(?:mutex|rwlock)_t\s+(\w+)", text):
                    self.locks.append((rel, m.group(1)))
            # Comments do not count as the code naming something.
            text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
            text = re.sub(r"//[^\n]*", " ", text)
            if rel.endswith(".c") and top not in ("tests", "tools"):
                for m in re.finditer(r"^[A-Za-z][^;{}()\n]*?\b(\w+)\(([^;{}]*?)\)\s*\n\{\n(.*?)^\}",
                                     text, re.M | re.S):
                    static = re.match(r"\s*static\b", m.group(0)) is not None
                    self.bodies.setdefault(m.group(1), []).append((rel, static, m.group(3)))
                    if not static:
                        self.exported[m.group(1)] = rel
                bare = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
                self.called[rel] = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", bare))
        self.words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))

    def value(self, name, depth=0):
        """The integer a #define stands for, or None."""
        text = self.defines.get(name)
        if text is None or depth > 8:
            return None
        text = text.strip()
        m = re.fullmatch(r'"(\d+)"', text)
        if m:
            return int(m.group(1))
        text = re.sub(r"\b(\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", text)

        def sub(m):
            v = self.value(m.group(0), depth + 1)
            if v is None:
                raise ValueError(m.group(0))
            return str(v)

        try:
            text = re.sub(r"[A-Za-z_]\w*", sub, text)
        except ValueError:
            return None
        if not re.fullmatch(r"[\d\s+\-*/()]+", text):
            return None
        try:
            return int(eval(text, {"__builtins__": {}}))  # digits and operators only
        except Exception:
            return None

    KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined"}

    def calls(self, func):
        """The functions func calls (or passes on as a callback), its callees'
        in place, each at its first call: the order a run of func meets them."""
        out, seen = [], set()

        def walk(name, depth, caller=None):
            if name in seen or depth > 60:
                return
            seen.add(name)
            out.append(name)
            defs = self.bodies.get(name, [])
            # A static function of the caller's file, else the exported one.
            defs = [d for d in defs if d[0] == caller and d[1]] or [d for d in defs if not d[1]]
            for rel, _, body in defs:
                body = re.sub(r'"(?:\\.|[^"\\])*"', '""', body)
                # A call, or a function of the tree passed on (a callback, run
                # where it is passed: registry_with_lock(r, load_locked, ...)).
                for m in re.finditer(r"\b([A-Za-z_]\w*)\b(\s*\()?", body):
                    name = m.group(1)
                    if name not in self.KEYWORDS and (m.group(2) or name in self.bodies):
                        walk(name, depth + 1, rel)

        walk(func, 0)
        return out

    def exists(self, rel):
        rel = os.path.normpath(rel)
        return rel in self.files or rel in self.dirs

    def find_under(self, folder, base):
        """Files named base under folder (any depth)."""
        pre = folder.rstrip("/") + "/"
        return [f for f in self.files if f.startswith(pre) and os.path.basename(f) == base]

    def source_folders(self):
        """Top-level folders that hold C sources or headers."""
        out = set()
        for f in self.files:
            parts = f.split(os.sep)
            if len(parts) > 1 and f.endswith(CODE_EXT) and parts[0] not in FOLDERS_ONLY:
                out.add(parts[0])
        return out


class Doc:
    def __init__(self, path, text):
        self.path = path
        self.text = text
        # The text with newlines as spaces, offsets unchanged: a claim may wrap.
        self.flat = text.replace("\n", " ")
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, off):
        lo, hi = 0, len(self.starts)
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            if self.starts[mid] <= off:
                lo = mid
            else:
                hi = mid
        return lo + 1

    def ticks(self, lo=0, hi=None):
        hi = len(self.flat) if hi is None else hi
        for m in re.finditer(r"`([^`]+)`", self.flat[lo:hi]):
            yield lo + m.start(1), m.group(1)

    def section(self, title):
        """(start, end) of the part of the text under a heading starting with title."""
        m = re.search(r"^(#+) " + re.escape(title) + r".*$", self.text, re.M)
        if not m:
            return None
        level = len(m.group(1))
        n = re.search(r"^#{1,%d} " % level, self.text[m.end():], re.M)
        return m.end(), m.end() + n.start() if n else len(self.text)

    def blocks(self, lo, hi):
        """Paragraphs, list items and table rows of text[lo:hi], as (start, end)."""
        out = []
        start = None
        for m in re.finditer(r"[^\n]*\n?", self.text[lo:hi]):
            line = m.group(0)
            a = lo + m.start()
            stripped = line.strip()
            new_item = re.match(r"\s*(?:[-*]|\d+\.|\|)\s", line) is not None
            if not stripped or new_item:
                if start is not None:
                    out.append((start, a))
                start = a if stripped else None
                if line.lstrip().startswith("|"):
                    out.append((a, a + len(line)))
                    start = None
            elif start is None:
                start = a
        if start is not None:
            out.append((start, hi))
        return out


class Checker:
    def __init__(self, tree):
        self.tree = tree
        self.problems = []
        self.counts = {}

    def fail(self, doc, off, msg):
        self.problems.append("%s:%d: %s" % (doc.path, doc.line(off), msg))

    def count(self, what, n=1):
        self.counts[what] = self.counts.get(what, 0) + n

    # --- numbers ---------------------------------------------------------

    UNITS = {"ms": ("t", 1), "s": ("t", 1000), "KiB": ("b", 1024), "MiB": ("b", 1024 * 1024),
             "bytes": ("b", 1), "B": ("b", 1)}
    NUM = r"(\d[\d,]*(?:\.\d+)?)(?:\s*(ms|s|KiB|MiB|bytes|B)\b)?"

    def numbers(self, doc):
        pats = [
            (re.compile(self.NUM + r"\s*(?:\(|,)\s*`([A-Z][A-Z0-9_]+)`"), (1, 2, 3)),
            (re.compile(r"`([A-Z][A-Z0-9_]+)`\s*(?:\(|:\s*)" + self.NUM + r"\s*[,;)]"), (2, 3, 1)),
        ]
        seen = set()
        for pat, (gn, gu, gname) in pats:
            for m in pat.finditer(doc.flat):
                name, num, unit = m.group(gname), m.group(gn), m.group(gu)
                if (m.start(), name) in seen:
                    continue
                seen.add((m.start(), name))
                self.claim(doc, m.start(), name, num, unit)

    def claim(self, doc, off, name, num, unit):
        self.count("numbers")
        code = self.tree.value(name)
        if code is None:
            self.fail(doc, off, "`%s` (%s%s): the code has no #define of %s as a number"
                      % (name, num, " " + unit if unit else "", name))
            return
        said = float(num.replace(",", ""))
        if unit:
            kind, mult = self.UNITS[unit]
            said *= mult
            if kind == "t":
                if name.endswith("_S") or name.endswith("_SEC"):
                    code *= 1000
                elif not name.endswith("_MS"):
                    self.fail(doc, off, "`%s`: %s %s is a time, the name says no unit (_MS, _S)"
                              % (name, num, unit))
                    return
        if abs(said - code) > 1e-9:
            self.fail(doc, off, "`%s` is %s in the code; the text says %s%s"
                      % (name, self.tree.defines[name].strip(), num, " " + unit if unit else ""))

    # --- names and files ---------------------------------------------------

    def names(self, doc, lo=0, hi=None, folder=None, skip=()):
        for off, tok in doc.ticks(lo, hi):
            if not any(a <= off < b for a, b in skip):
                self.token(doc, off, tok, folder)

    def token(self, doc, off, tok, folder):
        t = tok.strip()
        if t.endswith("()"):
            t = t[:-2]
        if " " in t or not t:
            return
        if self.is_path(t):
            if not (folder is None and t.endswith("/") and t.rstrip("/") in MOUNT_DIRS):
                self.path(doc, off, t, folder)
            return
        for part in t.lstrip("$").split("|"):
            part = part.split("=")[0]
            if re.fullmatch(r"[a-z][a-z0-9]*_[a-z0-9_]*\*?|[A-Z][A-Z0-9]*_[A-Z0-9_]*\*?", part):
                self.count("names")
                if part in EXTERNAL:
                    continue
                if part.endswith("*"):
                    ok = any(w.startswith(part[:-1]) for w in self.tree.words)
                else:
                    ok = part in self.tree.words
                if not ok:
                    self.fail(doc, off, "`%s`: no code, script or build file of the tree has %s"
                              % (tok, part))

    @staticmethod
    def is_path(t):
        if t.startswith(("/", "~", "$", "-", "<")) or "<" in t or "*" in t or "..." in t:
            return False
        if re.search(r"[^\w./+-]", t):
            return False
        if t.endswith("/"):
            return re.fullmatch(r"[\w.+-]+(/[\w.+-]+)*/", t) is not None
        return t.endswith(PATH_EXT) and ("/" in t or t.endswith(CODE_EXT))

    def path(self, doc, off, t, folder):
        self.count("files")
        tree = self.tree
        cands = [t]
        if folder:
            cands.insert(0, folder + "/" + t)
        if any(tree.exists(c) for c in cands):
            return
        if "/" not in t.rstrip("/"):
            hits = tree.find_under(folder or ".", t) if folder else \
                [f for f in tree.files if os.path.basename(f) == t]
            if hits:
                return
        where = " in %s/" % folder if folder else ""
        self.fail(doc, off, "`%s`%s: no such file or folder" % (t, where))

    # --- folders: the parts table and the list of files --------------------

    def folder_blocks(self, doc):
        """Each folder's row of the parts table and item of the file list:
        {folder: [(start, end)]}."""
        out = {}
        for m in re.finditer(r"^\| `([\w.-]+)/` \|[^\n]*", doc.text, re.M):
            out.setdefault(m.group(1), []).append((m.start(), m.end()))
        for m in re.finditer(r"^- `([\w.-]+)/`[^:\n`]*:(?:[^\n]*\n)(?:(?:  +[^\n]*)?\n)*?(?=\S|\Z)",
                             doc.text, re.M):
            out.setdefault(m.group(1), []).append((m.start(), m.end()))
        return out

    def folders(self, doc):
        blocks = self.folder_blocks(doc)
        tree = self.tree
        for folder, spans in sorted(blocks.items()):
            named = set()
            for lo, hi in spans:
                self.names(doc, lo, hi, folder)
                for _, tok in doc.ticks(lo, hi):
                    t = tok.strip().rstrip("/")
                    for c in (folder + "/" + t, t):
                        c = os.path.normpath(c)
                        named.add(c)
                        named.update(f for f in tree.find_under(folder, t)) if "/" not in t else None
            off = spans[0][0]
            for lo, hi in spans:
                if "from the bottom up" in doc.flat[lo:hi].split(":", 1)[0]:
                    self.layers(doc, lo, hi, folder)
            if not tree.exists(folder):
                self.fail(doc, off, "`%s/`: no such folder" % folder)
                continue
            must = set()
            pre = folder + "/"
            subdirs = {f[len(pre):].split("/")[0] for f in tree.files
                       if f.startswith(pre) and "/" in f[len(pre):]}
            for s in subdirs:
                if not skip_dir(s):
                    must.add((pre + s, "folder"))
            if folder not in FOLDERS_ONLY:
                for f in tree.files:
                    if not f.startswith(pre):
                        continue
                    rest = f[len(pre):]
                    if f.endswith(".c") and not rest.startswith(("tests/",)):
                        must.add((f, "source file"))
                    elif re.fullmatch(r"include/[^/]+\.h", rest):
                        must.add((f, "public header"))
            for f, what in sorted(must):
                self.count("coverage")
                if what == "folder":
                    ok = f in named or any(n.startswith(f + "/") for n in named)
                else:
                    ok = f in named
                if not ok:
                    self.fail(doc, off, "`%s/`: its %s `%s` is not named in its row or its item "
                              "of the file list" % (folder, what, f[len(pre):]))
        for folder in sorted(tree.source_folders()):
            self.count("coverage")
            if folder not in blocks:
                self.fail(doc, 0, "`%s/` has sources but no row in the parts table" % folder)

    # --- what each part uses ----------------------------------------------

    def uses(self, doc):
        tree = self.tree
        rows = [(m.start(), m.group(1), m.group(2)) for m in re.finditer(
            r"^\| `([\w.-]+)/` \|.*\|([^|\n]*)\|[ \t]*$", doc.text, re.M)]
        order = [f for _, f, _ in rows]
        public = {}  # header -> the folder whose include/ has it
        for f in tree.files:
            parts = f.split(os.sep)
            if len(parts) == 3 and parts[1] == "include" and f.endswith(".h"):
                public[parts[2]] = parts[0]
        for i, (off, folder, cell) in enumerate(rows):
            words = set(re.findall(r"[\w.-]+", cell))
            above = set(order[:i])
            if "all of the above" in cell:
                words |= above
            need = set()
            for h in tree.includes.get(folder, ()):
                if h in public and public[h] != folder:
                    need.add(public[h])
                elif h in LIBRARIES:
                    need.add(LIBRARIES[h])
            if "all of the above" not in cell:
                for n in sorted(words & (set(order) | set(LIBRARIES.values())) - need):
                    self.count("uses")
                    self.fail(doc, off, "`%s/`: its \"may use\" cell names %s, which its "
                              "sources do not use (they include none of its headers)"
                              % (folder, n))
            for n in sorted(need):
                self.count("uses")
                if n not in words:
                    self.fail(doc, off, "`%s/` uses %s (its sources include its header), which "
                              "its \"may use\" cell does not name" % (folder, n))
                elif n in order and n not in above:
                    self.fail(doc, off, "`%s/` uses `%s/`, whose row is below it: dependencies "
                              "point down the table" % (folder, n))

    def layers(self, doc, lo, hi, folder):
        """The .c files of an item, in the order named: none calls a function
        that a file named after it defines."""
        tree = self.tree
        seq = []
        for off, tok in doc.ticks(lo, hi):
            for f in [folder + "/" + tok] + tree.find_under(folder, tok):
                f = os.path.normpath(f)
                if f.endswith(".c") and f in tree.files and f not in [x for x, _ in seq]:
                    seq.append((f, off))
                    break
        rank = {f: i for i, (f, _) in enumerate(seq)}
        for f, off in seq:
            for name in sorted(tree.called.get(f, ())):
                g = tree.exported.get(name)
                self.count("layers")
                if g and g != f and g in rank and rank[g] > rank[f]:
                    self.fail(doc, off, "`%s/`, from the bottom up: %s calls %s of %s, named "
                              "after it" % (folder, f[len(folder) + 1:], name,
                                            g[len(folder) + 1:]))

    # --- a comment's reference to a part of a header ----------------------

    def references(self):
        tree = self.tree
        headers = {}
        for f in tree.files:
            if f.endswith(".h"):
                headers.setdefault(os.path.basename(f), []).append(f)
        for rel in sorted(tree.files):
            if not rel.endswith(CODE_EXT) or rel.startswith("tests/"):
                continue
            text = tree.texts.get(rel, "")
            for c in re.finditer(r"/\*.*?\*/", text, re.S):
                flat = re.sub(r"\s*\n\s*\*?\s*", " ", c.group(0))
                for m in re.finditer(r"\b(\w+\.h),? \"([A-Z][^\"]{2,40})\"", flat):
                    self.count("references")
                    line = text.count("\n", 0, c.start()) + 1
                    h, title = m.group(1), m.group(2)
                    found = False
                    for path in headers.get(h, []):
                        if title in tree.texts.get(path, ""):
                            found = True
                    if not found:
                        self.problems.append('%s:%d: its comment sends to %s "%s": %s' % (
                            rel, line, h, title, "no such header" if h not in headers
                            else "that header has no such part"))

    # --- a header's own file map ------------------------------------------

    def file_maps(self):
        tree = self.tree
        for rel in sorted(tree.files):
            if not rel.endswith(".h") or "/include/" in rel or rel.startswith(("tests/", "tools/")):
                continue
            text = tree.texts.get(rel, "")
            comment = None
            for c in re.finditer(r"/\*.*?\*/", text, re.S):
                maps = [l for l in c.group(0).split("\n")
                        if re.match(r"\s*\*\s+\(?[\w/]+\.c\s{2,}", l + "  ")]
                if len(maps) >= 3:
                    comment = c
                    break
            if not comment:
                continue
            folder = os.path.dirname(rel)
            named = set()
            first = text.count("\n", 0, comment.start()) + 1
            for i, l in enumerate(comment.group(0).split("\n")):
                for name in re.findall(r"(?<![\w.])([\w/]+\.c)\b", l):
                    self.count("file maps")
                    p = os.path.normpath(os.path.join(folder, name))
                    named.add(p)
                    if p not in tree.files:
                        self.problems.append("%s:%d: its file map names %s: no such file"
                                             % (rel, first + i, name))
            for f in sorted(tree.files):
                if f.startswith(folder + "/") and f.endswith(".c") and f not in named:
                    self.count("file maps")
                    self.problems.append("%s:1: its file map does not name %s"
                                         % (rel, f[len(folder) + 1:]))

    # --- locks -------------------------------------------------------------

    def locks(self, doc):
        sec = doc.section("Threads and locks")
        if not sec:
            self.fail(doc, 0, 'no section "Threads and locks"')
            return
        blocks = doc.blocks(*sec)
        for rel, name in self.tree.locks:
            self.count("locks")
            base = os.path.basename(rel)
            ok = False
            for lo, hi in blocks:
                toks = [t for _, t in doc.ticks(lo, hi)]
                names_file = any(t == rel or t.endswith("/" + base) or t == base for t in toks)
                names_lock = any(re.search(r"(^|->|\.|\s)" + re.escape(name) + r"$", t)
                                 for t in toks)
                if names_file and names_lock:
                    ok = True
                    break
            if not ok:
                self.fail(doc, sec[0], "the lock `%s` of %s is not named with its file in "
                          '"Threads and locks"' % (name, rel))

    # --- the order of a start ---------------------------------------------

    def order(self, doc):
        for m in re.finditer(r"in the order of\s+`(\w+)`", doc.flat):
            func = m.group(1)
            self.count("orders")
            if func not in self.tree.bodies:
                self.fail(doc, m.start(), "`%s`: no function of that name in the tree" % func)
                continue
            lo = max(doc.flat.rfind("\n\n", 0, m.start()), 0)
            blocks = [b for b in doc.blocks(0, len(doc.text)) if b[0] <= m.start() < b[1]]
            lo, hi = blocks[0] if blocks else (lo, m.end())
            seq = self.tree.calls(func)
            pos = {n: i for i, n in enumerate(seq)}
            last, last_name = -1, None
            for off, tok in doc.ticks(lo, hi):
                name = tok[:-2] if tok.endswith("()") else tok
                if name == func or not re.fullmatch(r"[a-z_]\w*", name) or name not in \
                        self.tree.bodies and name not in pos:
                    continue
                self.count("orders")
                if name not in pos:
                    self.fail(doc, off, "`%s` is not called by `%s`" % (name, func))
                    continue
                if pos[name] < last:
                    self.fail(doc, off, "`%s` comes before `%s` in `%s`, not after"
                              % (name, last_name, func))
                last, last_name = max(last, pos[name]), name if pos[name] >= last else last_name

    # --- tables --------------------------------------------------------------

    def cells(self, doc):
        for m in re.finditer(r"^\|.*\|[ \t]*$", doc.text, re.M):
            row = m.group(0)
            if re.fullmatch(r"[|\s:-]+", row):
                continue
            for cell in re.split(r"(?<!\\)\|", row.strip()[1:-1]):
                self.count("cells")
                if len(cell.strip()) > CELL_MAX:
                    self.fail(doc, m.start(), "a table cell of %d characters (at most %d: "
                              "make the rest prose under the table): %.60s..."
                              % (len(cell.strip()), CELL_MAX, cell.strip()))

    # --- the layout of README.md and CONTRIBUTING.md -------------------------

    def layout(self, doc, lo, hi):
        named = {t.rstrip("/") for _, t in doc.ticks(lo, hi) if t.endswith("/")}
        for folder in sorted(self.tree.source_folders() | {"tests", "docs", "contrib"}):
            self.count("layout")
            if folder not in named:
                self.fail(doc, lo, "the layout does not name `%s/`" % folder)

    # --- the whole run -------------------------------------------------------

    def run(self, design, contributing, readme):
        self.numbers(design)
        # A folder's row and item are read with the folder (folders()).
        self.names(design, skip=[s for v in self.folder_blocks(design).values() for s in v])
        self.folders(design)
        self.uses(design)
        self.locks(design)
        self.order(design)
        self.cells(design)
        self.file_maps()
        self.references()
        for doc in (contributing, readme):
            self.numbers(doc)
        self.names(contributing)
        sec = readme.section("Development")
        if not sec:
            self.fail(readme, 0, 'no section "Development"')
        else:
            self.names(readme, *sec)
            self.layout(readme, *sec)
        return self.problems


def load(root, rel, text=None):
    if text is None:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            text = fh.read()
    return Doc(rel, text)


def check(root, tree=None, texts=None):
    texts = texts or {}
    tree = tree or Tree(root)
    c = Checker(tree)
    problems = c.run(*(load(root, rel, texts.get(rel))
                       for rel in ("docs/design.md", "CONTRIBUTING.md", "README.md")))
    return problems, c.counts


def self_test(root):
    """Each check, given a document made wrong on purpose, must fail."""
    tree = Tree(root)
    texts = {}
    for rel in ("docs/design.md", "README.md"):
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            texts[rel] = fh.read()
    design, readme = texts["docs/design.md"], texts["README.md"]
    base, _ = check(root, tree)
    if base:
        print("not ok - self-test: the documents do not pass as they are:")
        print("\n".join(base))
        return 1
    m = re.search(Checker.NUM + r"\s*(?:\(|,)\s*`([A-Z][A-Z0-9_]+)`", design)
    f = re.search(r"\(`([a-z_]+)\.c`", design)
    if not m or not f:
        print("not ok - self-test: design.md states no number next to a constant, or no file")
        return 1
    num = m.group(1).replace(",", "")
    wrong_num = design[:m.start(1)] + str(int(float(num)) + 1) + design[m.end(1):]

    def swap(text, a, b):
        return text.replace(a, "\0").replace(b, a).replace("\0", b)

    cases = [
        ("a wrong number (%s of `%s`, plus one)" % (m.group(1), m.group(3)),
         "docs/design.md", wrong_num, "in the code; the text says"),
        ("a file that does not exist", "docs/design.md",
         design.replace("`%s.c`" % f.group(1), "`%s_gone.c`" % f.group(1), 1), "no such file"),
        ("a source file left out of its folder's row and item", "docs/design.md",
         re.sub(r"`%s\.c`" % f.group(1), "`%s.h`" % f.group(1), design), "is not named"),
        ("a function the code does not have", "docs/design.md",
         design.replace("`registry_probe_targets`", "`registry_probe_targetz`", 1),
         "no code, script"),
        ("a cell over %d characters" % CELL_MAX, "docs/design.md",
         design.replace("| `tools/` |", "| `tools/` " + "x" * (CELL_MAX + 1) + " |", 1),
         "table cell"),
        ("a lock left out", "docs/design.md", design.replace("`q_lock`", "`q_lck`"),
         "the lock `q_lock`"),
        ("two steps of the start swapped", "docs/design.md",
         swap(design, "`fs_notifier_start`", "`fs_guard_start`"), "not after"),
        ("two files of a folder from the bottom up swapped", "docs/design.md",
         swap(design, "(`dir.c`)", "(`tree.c`)"), "named after it"),
        ("a part the fs uses left out of its row", "docs/design.md",
         design.replace("| common, registry, libfuse3 |", "| common, libfuse3 |", 1),
         "cell does not name"),
        ("a part the fs does not use named in its row", "docs/design.md",
         design.replace("| common, registry, libfuse3 |", "| common, registry, control, libfuse3 |",
                        1), "which its sources do not use"),
        ("a folder left out of the README's layout", "README.md",
         readme.replace("`probe/`", "probe", 1), "the layout does not name `probe/`"),
    ]
    # The code made wrong: a header's text, as the checks read it.
    def code_case(what, rel, old, new, expect):
        t = copy.copy(tree)
        t.texts = dict(tree.texts)
        t.texts[rel] = tree.texts.get(rel, "").replace(old, new)
        return what, rel, t, expect

    code_cases = [
        code_case("a file left out of a header's file map", "registry/core.h", "txn.c",
                  "txn.o", "its file map does not name txn.c"),
        code_case('a comment sending to a part its header does not have',
                  "registry/include/reg_model.h", "Sharing", "Shared",
                  'sends to reg_model.h "Sharing"'),
    ]
    rc = 0
    for what, rel, t, expect in code_cases:
        if t.texts[rel] == tree.texts.get(rel):
            print("not ok - self-test: %s: %s did not change (update the case)" % (what, rel))
            rc = 1
            continue
        problems, _ = check(root, t)
        hit = [p for p in problems if expect in p]
        print("%s - self-test: %s: %s" % ("ok" if hit else "not ok", what,
                                          hit[0] if hit else "passed (it must fail)"))
        rc |= 0 if hit else 1
    for what, rel, text, expect in cases:
        if text == texts[rel]:
            print("not ok - self-test: %s: the document did not change (update the case)" % what)
            rc = 1
            continue
        problems, _ = check(root, tree, {rel: text})
        hit = [p for p in problems if expect in p]
        print("%s - self-test: %s: %s" % ("ok" if hit else "not ok", what,
                                          hit[0] if hit else "passed (it must fail)"))
        rc |= 0 if hit else 1
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        return self_test(root)
    problems, counts = check(root)
    for p in problems:
        print("not ok - " + p)
    print("%s: %s" % ("ok" if not problems else "%d problem(s)" % len(problems),
                      ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
