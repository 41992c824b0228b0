#!/usr/bin/env python3
"""Lengths of the C++ functions in some folders, longest first: a function's length is its lines
from the one that opens its body's brace back to the start of its signature (the line after the
previous declaration, comment or blank line), to the closing brace, inclusive. Functions are the
brace blocks at namespace scope, or inside a class or struct at namespace scope, whose header holds
a '('; lambdas and local classes count toward the function around them.

  scripts/function_lengths.py [--over N] [--files] FOLDER...

--over N: only functions longer than N lines (exit 1 if there is one); --files: also the files
longer than 400 lines. Comments and string literals are skipped when braces are counted."""
import argparse
import pathlib
import re
import sys


def strip(src):
    """The source with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif src.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', src[i:])
            end = src.find(")" + m.group(1) + '"', i) + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", src[i:end])); i = end
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(path):
    text = strip(path.read_text())
    lines = text.split("\n")
    found = []
    stack = []  # per open brace: "ns", "class", "fn", "other"
    header_start = 0  # line where the current declaration began
    header = ""
    line_no = 0
    for line_no, line in enumerate(lines, 1):
        if line.lstrip().startswith("#"):  # preprocessor lines (no braces of functions)
            continue
        for c in line:
            if c == "{":
                h = header.strip()
                scope = [s for s in stack if s != "ns"]
                if re.match(r"^(inline\s+)?namespace\b", h) or h.startswith('extern "C"'):
                    kind = "ns"
                elif not scope or scope == ["class"] * len(scope):
                    if re.match(r"^(template\s*<.*>\s*)?(class|struct|union)\b", h) and "(" not in h.split("{")[0].split(":")[0]:
                        kind = "class"
                    elif re.match(r"^(template\s*<.*>\s*)?enum\b", h):
                        kind = "other"
                    elif "(" in h:
                        kind = "fn"
                        found.append([header_start, None, h])
                    else:
                        kind = "other"
                else:
                    kind = "other"
                stack.append(kind)
                header = ""
            elif c == "}":
                kind = stack.pop() if stack else "other"
                if kind == "fn":
                    found[-1][1] = line_no
                header = ""
            elif c == ";":
                header = ""
            else:
                if not header.strip() and not c.isspace():
                    header_start = line_no
                header += c
        header += " "
        if not header.strip():
            header = ""
    result = []
    for start, end, h in found:
        if end is None:
            continue
        name = re.sub(r"\s+", " ", h.split("(")[0]).strip().split(" ")[-1]
        result.append((end - start + 1, f"{path}:{start}", name))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--over", type=int, default=0)
    ap.add_argument("--files", action="store_true")
    args = ap.parse_args()
    allf, long_files = [], []
    for folder in args.folders:
        for p in sorted(pathlib.Path(folder).rglob("*")):
            if p.suffix not in (".cc", ".h"):
                continue
            allf += functions(p)
            n = p.read_text().count("\n")
            if n > 400:
                long_files.append((n, str(p)))
    allf.sort(reverse=True)
    shown = [f for f in allf if f[0] > args.over]
    for n, where, name in shown if args.over else allf[:20]:
        print(f"{n:5d}  {name}  {where}")
    if args.files:
        for n, p in sorted(long_files, reverse=True):
            print(f"file {n:5d}  {p}")
    print(f"{len(allf)} functions; longest {allf[0][0] if allf else 0} lines; {len(shown) if args.over else ''}"
          f"{' over ' + str(args.over) if args.over else ''}")
    return 1 if args.over and shown else 0


if __name__ == "__main__":
    sys.exit(main())
