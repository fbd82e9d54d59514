#!/usr/bin/env python3
"""Fails if the imports between the source files of any crate form a circle.

A file's module path comes from where it sits under `src/`; each `use crate::…`, `use super::…`
and `use self::…`, and each `crate::…`/`super::…` path written out in code, is resolved to the
deepest module file it names. Imports between a module and
its own submodules (`super::` from a child, a parent re-exporting its children) are how Rust
modules are built and are not counted. Usage: python3 .ci/import-cycles.py [ROOT]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
# Paths written out in code (`crate::workflow::check(…)`) import as much as a `use` does.
INLINE = re.compile(r"(?<![\w:])((?:crate|super)(?:::\w+)+)")
COMMENT = re.compile(r"//.*$", re.M)


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    return tuple(rel)


def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    head, rest = tree.split("{", 1)
    body = rest[: rest.rindex("}")]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(body):
        depth += c == "{"
        depth -= c == "}"
        if c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return [p for part in parts if part for p in expand(head + part)]


def crate_graph(src):
    files = {}
    for dirpath, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                files[module_of(src, os.path.join(dirpath, name))] = os.path.join(dirpath, name)
    edges = {m: set() for m in files}
    for module, path in files.items():
        code = COMMENT.sub("", open(path, encoding="utf-8").read())
        paths = [item for tree in USE.findall(code) for item in expand(tree)]
        paths += INLINE.findall(USE.sub("", code))
        for item in paths:
            segments = item.split(" as ")[0].split("::")
            if segments[0] == "crate":
                target, segments = [], segments[1:]
            elif segments[0] == "self":
                target, segments = list(module), segments[1:]
            elif segments[0] == "super":
                target = list(module)
                while segments and segments[0] == "super":
                    target, segments = target[:-1], segments[1:]
            else:
                continue
            deepest = tuple(target)
            for segment in segments:
                if tuple(target + [segment]) in files:
                    target.append(segment)
                    deepest = tuple(target)
                else:
                    break
            if deepest in files and deepest != module:
                related = deepest[: len(module)] == module or module[: len(deepest)] == deepest
                if not related:
                    edges[module].add(deepest)
    return files, edges


def circles(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in edges:
        if v not in index:
            visit(v)
    return out


failed = False
checked = 0
for parent in ("crates", "."):
    base = os.path.join(root, parent)
    names = sorted(os.listdir(base)) if parent == "crates" else ["bench"]
    for name in names:
        src = os.path.join(base, name, "src")
        if not os.path.isdir(src):
            continue
        files, edges = crate_graph(src)
        checked += len(files)
        for component in circles(edges):
            failed = True
            print(f"import circle in {name}: " + ", ".join(os.path.relpath(files[m], root) for m in component))
print(f"{checked} source files: " + ("circles found" if failed else "no import circles"))
sys.exit(1 if failed else 0)
