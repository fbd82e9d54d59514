#!/usr/bin/env python3
"""Checks the README and the book (docs/) before and after `mdbook build docs`.

- every page of docs/ is in SUMMARY.md (mdbook fails on the reverse: `create-missing = false`);
- every page with Rust code is doctested (named in agentstate-runtime's `docs` module);
- every link of the Markdown sources resolves: a file of the repository, a heading's anchor in it,
  or a page of this repository on GitHub (checked against the tree);
- with the built book's directory as argument, every local link and anchor of its HTML resolves.

Usage: .ci/book-check.py [BUILT_BOOK_DIR]
"""

import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GITHUB = re.compile(r"https://github\.com/agentstate/agentstate/(?:tree|blob)/main/(.+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
problems: list[str] = []


def prose(path: Path):
    """The lines of a Markdown file outside code fences, with their numbers."""
    fence = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            yield number, line


def slug(heading: str) -> str:
    """A heading's anchor, as GitHub and mdbook make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose(path):
        if m := re.match(r"^#{1,6} (.*)", line):
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def check_target(source: Path, number: int, target: str) -> None:
    where = f"{source.relative_to(ROOT)}:{number}"
    if m := GITHUB.match(target):
        target = os.path.relpath(ROOT / m.group(1), source.parent)
    elif re.match(r"^[a-z]+:", target):
        return  # another site: not checked offline
    path, _, anchor = target.partition("#")
    file = (source.parent / unquote(path)).resolve() if path else source
    if not file.exists():
        problems.append(f"{where}: {target}: no such file")
    elif anchor and file.suffix == ".md" and anchor not in anchors(file):
        problems.append(f"{where}: {target}: no heading with that anchor")


def check_sources() -> None:
    pages = sorted(p for p in DOCS.glob("*.md") if p.name != "SUMMARY.md")
    summary = (DOCS / "SUMMARY.md").read_text()
    for page in pages:
        if f"]({page.name})" not in summary:
            problems.append(f"docs/{page.name}: not in docs/SUMMARY.md")
    doctests = (ROOT / "crates/agentstate-runtime/src/lib.rs").read_text()
    for page in [ROOT / "README.md", *pages]:
        rust = re.search(r"^```rust", page.read_text(), re.M)
        included = page.relative_to(ROOT).as_posix()
        if rust and f'include_str!("../../../{included}")' not in doctests:
            problems.append(f"{included}: has Rust code but is not doctested in agentstate-runtime")
        for number, line in prose(page):
            for target in LINK.findall(line):
                check_target(page, number, target)


class Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            elif name in ("href", "src") and value:
                self.links.append(value)


def check_built(book: Path) -> None:
    parsed: dict[Path, Html] = {}

    def parse(path: Path) -> Html:
        if path not in parsed:
            parsed[path] = Html()
            parsed[path].feed(path.read_text(errors="replace"))
        return parsed[path]

    pages = sorted(book.rglob("*.html"))
    if not pages:
        problems.append(f"{book}: no HTML (was the book built?)")
    for page in pages:
        for link in parse(page).links:
            url = urlsplit(link)
            # Other sites, and the site's root (404.html's way home, where the book is served).
            if url.scheme or url.netloc or link.startswith("/"):
                continue
            file = (page.parent / unquote(url.path)).resolve() if url.path else page
            where = f"{page.relative_to(book)}: {link}"
            if file.is_dir():
                file = file / "index.html"
            if not file.exists():
                problems.append(f"{where}: no such file in the built book")
            elif url.fragment and file.suffix == ".html" and unquote(url.fragment) not in parse(file).ids:
                problems.append(f"{where}: no element with that id")


def main() -> int:
    check_sources()
    if len(sys.argv) > 1:
        check_built(Path(sys.argv[1]))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print("the README and the book: every page listed and doctested, every link resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
