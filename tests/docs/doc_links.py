#!/usr/bin/env python3
"""doc_links.py - every link and cited path in the repository's Markdown
resolves inside the repository.

  python3 tests/docs/doc_links.py [ROOT]        (ROOT: the checkout, default ../..)

Checked in every .md file of the checkout (build folders, dot folders and
fuzz-out/ left out):
  - Markdown links and images, [text](target) and [id]: target: the target,
    relative to the page, must name an existing file or folder inside the
    repository; a #fragment must name a heading of the target page (GitHub's
    anchor rule). http(s) and mailto links are not fetched.
  - paths in backticks, `docs/design.md` or a command such as
    `build/npusim replay --trace traces/mixed.json`: every word whose first
    component is a top-level file or folder of the repository (sim/,
    configs/, README.md, .ci/ ...) must exist. Globs (configs/systems/*.json)
    and braces (hw_models/op.{h,c}) must match; a trailing :LINE is dropped.
    A bare page name (`collectives.md`) must be a page beside the citing one.
    build*/ (outputs) and words of another repository (owner/repo:path) are
    not repository paths. Of fenced code blocks only commands (```sh) are
    read, and of them only words ending in a known file type (.json, .py ...).
Prints one line per broken reference, FILE:LINE: what, and exits 1 if there
is any; exit 0 with a count otherwise.
"""

import glob
import os
import re
import sys

SKIP_DIRS = ("build", "fuzz-out")  # prefixes of ignored output folders
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?\s*(?:\"[^\"]*\"|'[^']*'|\([^)]*\))?\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
SHELL = ("sh", "bash", "console", "shell")
FILE_TYPES = (".md", ".c", ".h", ".py", ".sh", ".json", ".csv", ".gz", ".txt", ".ini")


def skipped(name):
    return name.startswith(".") and name != ".ci" or name.startswith(SKIP_DIRS)


def markdown_files(root):
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not skipped(d))
        found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    return found


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped but - and
    _, spaces to -."""
    text = re.sub(r"`|\*\*?|__", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out = {}, set()
        in_fence = False
        for line in open(path, encoding="utf-8"):
            if FENCE.match(line):
                in_fence = not in_fence
            m = None if in_fence else re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
        cache[path] = out
    return cache[path]


def inside(root, path):
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def check_link(root, page, target):
    """None if the link resolves, else what is wrong."""
    if SCHEME.match(target) or target.startswith("//"):
        return None  # external: not fetched
    path, _, fragment = target.partition("#")
    dest = page if not path else os.path.normpath(
        os.path.join(root if path.startswith("/") else os.path.dirname(page), path.lstrip("/")))
    if not inside(root, dest):
        return f"link {target!r} leaves the repository"
    if not os.path.exists(dest):
        return f"link {target!r}: no such file or folder {os.path.relpath(dest, root)}"
    if fragment and dest.endswith(".md") and os.path.isfile(dest) \
            and fragment.lower() not in anchors(dest):
        return f"link {target!r}: no heading with anchor #{fragment} in {os.path.relpath(dest, root)}"
    return None


def braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return [w for part in m.group(1).split(",")
            for w in braces(word[:m.start()] + part + word[m.end():])]


def path_words(text, top, fenced):
    """Words of a code span or code line that look like repository paths."""
    chunks = re.split(r"[\s\"'=;()<>|&]+", text)
    for word in (w for c in chunks for w in re.split(r",(?![^{]*\})", c)):
        word = re.sub(r"(:\d+(-\d+)?)+$", "", word.rstrip(".:"))
        if not word or SCHEME.match(word):
            continue
        first = word.split("/", 1)[0]
        if first == word and word.endswith(".md") and first not in top:
            yield "./" + word  # a page beside this one
            continue
        if first not in top or (first == word and "." not in word):
            continue  # not under a top-level entry; a bare folder name is a word
        if fenced and not word.endswith(FILE_TYPES + ("/",)):
            continue
        yield word


def check_path(root, page, word):
    """None if every expansion of the word exists; ./NAME is beside the page."""
    base = os.path.dirname(page) if word.startswith("./") else root
    for w in braces(word):
        if any(c in w for c in "*?["):
            if not glob.glob(os.path.join(base, w)):
                return f"path `{word}`: {w} matches nothing"
        elif not os.path.exists(os.path.join(base, w)):
            return f"path `{word}`: no such file or folder"
    return None


def check_page(root, page, top):
    problems = []
    rel = os.path.relpath(page, root)
    fence = None  # None outside a code block, else its language
    for n, line in enumerate(open(page, encoding="utf-8"), 1):
        m = FENCE.match(line)
        if m:
            fence = None if fence is not None else line[m.end():].strip().lower()
            continue
        found = []
        if fence is not None:
            if fence in SHELL:
                found += [check_path(root, page, w) for w in path_words(line, top, True)]
        else:
            spans = [m.group(2) for m in CODE_SPAN.finditer(line)]
            prose = CODE_SPAN.sub("", line)
            found += [check_link(root, page, t) for t in LINK.findall(prose)]
            m = REF_DEF.match(prose)
            if m:
                found.append(check_link(root, page, m.group(1)))
            found += [check_path(root, page, w) for s in spans for w in path_words(s, top, False)]
        problems += [f"{rel}:{n}: {p}" for p in found if p]
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    top = {name for name in os.listdir(root) if not skipped(name)}
    pages = markdown_files(root)
    problems = [p for page in pages for p in check_page(root, page, top)]
    for p in problems:
        print(p)
    if problems:
        print(f"doc_links: {len(problems)} broken references in {len(pages)} pages")
        return 1
    print(f"doc_links: every link and cited path of {len(pages)} pages resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
