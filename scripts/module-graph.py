#!/usr/bin/env python3
"""Print a Rust crate's module graph: its circles (strongly connected components) and back-arrows.

    scripts/module-graph.py shim cli          # one summary per crate
    scripts/module-graph.py -v shim           # also every circle's members and every back-arrow

A node is a module with a file of its own (`foo.rs` or `foo/mod.rs`); an inline `mod x { .. }` counts as
part of its file, and `#[cfg(test)]` modules are left out (tests may reach anywhere). An arrow A -> B
means A's code names B: `use crate::b::..`, `crate::b::..`, `super::..`, or a child module's name. The
`mod b;` declaration itself is not an arrow. A back-arrow is an arrow that a depth-first walk from the
crate root (declaration order) finds pointing at a module still on its path: removing the back-arrows
leaves a graph without circles, so their count says how far the crate is from a layered one.

Standard library only, so that anyone can run it with python3.
"""
import argparse
import os
import re
import sys


def strip(src):
    """The source without comments, string and char literals (their text could look like paths)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and not (i and (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                i += len(m.group(0))
                out.append("' '")
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_modules(code):
    """Removes `#[cfg(test)] mod x { .. }` blocks and `#[cfg(test)] mod x;` declarations."""
    pat = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*([;{])")
    while True:
        m = pat.search(code)
        if not m:
            return code
        if m.group(3) == ";":
            code = code[:m.start()] + code[m.end():]
            continue
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[:m.start()] + code[j:]


def file_modules(code):
    """Names of the `mod x;` declarations in a file (modules with files of their own)."""
    return re.findall(r"\bmod\s+(\w+)\s*;", code)


class Crate:
    def __init__(self, src_dir):
        root = next((os.path.join(src_dir, f) for f in ("lib.rs", "main.rs")
                     if os.path.exists(os.path.join(src_dir, f))), None)
        if root is None:
            sys.exit(f"module-graph: no lib.rs or main.rs in {src_dir}")
        self.code = {}  # module path (tuple) -> stripped code
        self.children = {}  # module path -> [child names] in declaration order
        self.file = {}
        self._load((), root, src_dir)

    def _load(self, path, file, child_dir):
        with open(file, encoding="utf-8") as f:
            code = drop_test_modules(strip(f.read()))
        self.code[path] = code
        self.file[path] = file
        self.children[path] = []
        for name in file_modules(code):
            for cand, sub in ((os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name)),
                              (os.path.join(child_dir, name, "mod.rs"), os.path.join(child_dir, name))):
                if os.path.exists(cand):
                    self.children[path].append(name)
                    self._load(path + (name,), cand, sub)
                    break

    def resolve(self, start, segs):
        """The deepest module with a file that the path `segs`, seen from module `start`, names."""
        if not segs:
            return None
        if segs[0] == "crate":
            cur, segs = (), segs[1:]
        elif segs[0] in ("super", "self"):
            cur = start
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    cur = cur[:-1]
                segs = segs[1:]
        elif segs[0] in self.children.get(start, []):
            cur = start
        else:
            return None
        for s in segs:
            if s in self.children.get(cur, []):
                cur = cur + (s,)
            else:
                break
        return cur

    def arrows(self):
        edges = {m: [] for m in self.code}
        for m, code in self.code.items():
            targets = []
            for stmt in re.findall(r"\buse\s+([^;]*);", code):
                targets += [self.resolve(m, p) for p in expand_use(stmt)]
            rest = re.sub(r"\buse\s+[^;]*;", " ", code)
            for p in re.findall(r"\b(?:crate|super|self)(?:\s*::\s*\w+)+", rest):
                targets.append(self.resolve(m, [s.strip() for s in p.split("::")]))
            for child in self.children[m]:
                if re.search(r"(?<![\w:])" + child + r"\s*::", rest):
                    targets.append(m + (child,))
            for t in targets:
                if t is not None and t != m and t not in edges[m]:
                    edges[m].append(t)
        return edges


def expand_use(stmt):
    """`a::{b, c::{d, self}}` -> [[a, b], [a, c, d], [a, c]]."""
    toks = re.findall(r"\w+|::|[{},*]", stmt)
    pos = 0

    def tree(prefix, in_group=False):
        nonlocal pos
        paths = []
        segs = list(prefix)
        while pos < len(toks):
            t = toks[pos]
            if t == "::":
                pos += 1
            elif t == "{":
                pos += 1
                while pos < len(toks) and toks[pos] != "}":
                    paths += tree(segs, True)
                    if pos < len(toks) and toks[pos] == ",":
                        pos += 1
                pos += 1
                return paths
            elif t in (",", "}"):
                break
            elif t == "*":
                pos += 1
            elif t == "as":
                pos += 2
            elif t == "self" and in_group and segs == list(prefix):
                # `{self, ..}` names the prefix itself.
                pos += 1
                paths.append(segs)
                return paths
            else:
                segs.append(t)
                pos += 1
        if segs != list(prefix) or not paths:
            paths.append(segs)
        return paths

    return [p for p in tree([]) if p]


def name(m):
    return "::".join(m) if m else "(root)"


def analyse(edges, children):
    # Tarjan's strongly connected components, iterative.
    index, low, on, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        work = [(v, iter(edges[v]))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges[w])))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                sccs.append(comp)

    order = declaration_order(children)
    for v in order:
        if v not in index:
            strong(v)

    # Back-arrows: arrows to a module on the current depth-first path.
    back, state = [], {}
    for v in order:
        if v in state:
            continue
        state[v] = 1
        work = [(v, iter(edges[v]))]
        while work:
            node, it = work[-1]
            nxt = None
            for w in it:
                if state.get(w) == 1:
                    back.append((node, w))
                elif w not in state:
                    nxt = w
                    break
            if nxt is None:
                state[node] = 2
                work.pop()
            else:
                state[nxt] = 1
                work.append((nxt, iter(edges[nxt])))
    return [c for c in sccs if len(c) > 1], back


def declaration_order(children):
    out = []

    def walk(m):
        out.append(m)
        for c in children[m]:
            walk(m + (c,))

    walk(())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("crates", nargs="+", help="crate directories (each with src/lib.rs or src/main.rs)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list circles' members and back-arrows")
    args = ap.parse_args()
    for crate_dir in args.crates:
        crate = Crate(os.path.join(crate_dir, "src"))
        edges = crate.arrows()
        circles, back = analyse(edges, crate.children)
        circles.sort(key=lambda c: -len(c))
        narrows = sum(len(v) for v in edges.values())
        sizes = ", ".join(str(len(c)) for c in circles) or "none"
        print(f"{crate_dir}: {len(edges)} modules, {narrows} arrows, {len(circles)} circles "
              f"(sizes {sizes}), {len(back)} back-arrows")
        if args.verbose:
            for c in circles:
                print(f"  circle of {len(c)}: " + ", ".join(sorted(name(m) for m in c)))
            for a, b in back:
                print(f"  back-arrow: {name(a)} -> {name(b)}")


if __name__ == "__main__":
    main()
