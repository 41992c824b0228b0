#!/usr/bin/env python3
"""Runs the documentation's examples and checks its links (the CTest tests labelled docs).

Markdown pages (README.md and docs/*.md by default) mark a fenced code block as runnable with an
HTML comment on the line right before its opening fence (invisible on GitHub):

    <!-- doctest -->                      the ```sh block below runs
    <!-- doctest: needs fashion-mnist --> the same, skipped when Fashion-MNIST is not installed
    <!-- doctest: needs torch -->         the same, skipped when /usr/bin/python3 cannot import torch
    <!-- doctest: needs mpirun -->        the same, skipped when mpirun is not on PATH
    <!-- doctest: file NAME -->           the block below (any language) is written to NAME

Unmarked blocks are never run. The blocks of one page run in order in one bash process (one shell
state: a page can train a model in one block and evaluate it in a later one), with `set -e` and
`pipefail`, in a fresh temporary folder, with the built `normlab` first on PATH and the
environment variables NORMLAB_SOURCE (the repository's root) and NORMLAB_BUILD (the build folder).
A failing command is reported with the page, its line and the command.

Also checked, for every page: each relative link ([text](path), ![alt](path)) names an existing
file or folder; and README.md is at most --readme-max-bytes bytes (12288).

Usage: doctest_docs.py [--normlab BIN] [--build DIR] [--source DIR] [--workdir DIR]
                       [--links-only] [--list] [PAGE ...]
Exit status: 0 all passed, 1 a block or a check failed, 2 bad usage.
Only the Python standard library; python3 3.9 or later.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^\s*<!--\s*doctest(?::\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
FASHION_MNIST = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"


class Block:
    def __init__(self, page, line, lang, options, lines):
        self.page = page        # path relative to the source root
        self.line = line        # 1-based line of the block's first content line
        self.lang = lang
        self.options = options  # the marker's text after "doctest:", or ""
        self.lines = lines


def parse_page(path, rel):
    """Returns (blocks, errors, prose lines with their numbers) of one Markdown page."""
    text = open(path, encoding="utf-8").read().split("\n")
    blocks, errors, prose = [], [], []
    i = 0
    pending = None  # (line number, options) of a marker waiting for its fence
    while i < len(text):
        line = text[i]
        m = MARKER.match(line)
        if m:
            pending = (i + 1, (m.group(1) or "").strip())
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            fence, lang = f.group(2), f.group(3)
            start = i + 1
            body = []
            i += 1
            while i < len(text) and not text[i].strip().startswith(fence):
                body.append(text[i])
                i += 1
            if i == len(text):
                errors.append(f"{rel}:{start}: code block not closed")
            if pending is not None:
                if pending[0] != start - 1:
                    errors.append(f"{rel}:{pending[0]}: a doctest marker must be on the line right before a fence")
                blocks.append(Block(rel, start + 1, lang, pending[1], body))
                pending = None
            i += 1
            continue
        if pending is not None and line.strip():
            errors.append(f"{rel}:{pending[0]}: a doctest marker is not followed by a code block")
            pending = None
        prose.append((i + 1, line))
        i += 1
    if pending is not None:
        errors.append(f"{rel}:{pending[0]}: a doctest marker is not followed by a code block")
    for b in blocks:
        opts = b.options
        if opts.startswith("file "):
            if not opts[5:].strip() or "/" in opts[5:].strip():
                errors.append(f"{rel}:{b.line - 2}: doctest: file needs a plain file name")
        elif opts not in ("", "needs fashion-mnist", "needs torch", "needs mpirun"):
            errors.append(f"{rel}:{b.line - 2}: unknown doctest option '{opts}'")
        elif b.lang not in ("sh", "bash", "shell"):
            errors.append(f"{rel}:{b.line - 1}: a doctest block must be ```sh, not ```{b.lang}")
    return blocks, errors, prose


def check_links(path, rel, prose, root):
    """Relative links of the page's prose (not code) must name existing files or folders."""
    errors = []
    base = os.path.dirname(path)
    for number, line in prose:
        for m in LINK.finditer(INLINE_CODE.sub("", line)):
            target = m.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL (https:, mailto:) or an anchor of the same page
            file_part = target.split("#", 1)[0].split("?", 1)[0]
            resolved = os.path.normpath(os.path.join(base, file_part))
            if not os.path.exists(resolved):
                errors.append(f"{rel}:{number}: broken link '{target}' (no {os.path.relpath(resolved, root)})")
    return errors


def shell_script(blocks):
    """One bash script for a page's runnable blocks; returns (script, generated line -> block, line)."""
    out = [
        "set -eE -o pipefail",
        "__dt_where='(start)'",
        "trap '__dt_rc=$?; echo \"DOCTEST-FAILED ${__dt_where} ${LINENO} ${__dt_rc} ${BASH_COMMAND}\" >> \"$__dt_report\"' ERR",
    ]
    where = {}
    for b in blocks:
        out.append(f"__dt_where='{b.page}:{b.line}'")
        out.append(f"echo '--- {b.page}:{b.line}'")
        opts = b.options
        if opts.startswith("file "):
            name = opts[5:].strip()
            out.append(f"cat > '{name}' <<'__DOCTEST_END_OF_FILE__'")
            out.extend(b.lines)
            out.append("__DOCTEST_END_OF_FILE__")
            continue
        for k, line in enumerate(b.lines):
            out.append(line)
            where[len(out)] = (b, k)
    out.append("__dt_where='(end)'")
    return "\n".join(out) + "\n", where


def have_torch(cache={}):
    if "torch" not in cache:
        cache["torch"] = subprocess.run([args_torch_python(), "-c", "import torch"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL).returncode == 0
    return cache["torch"]


def args_torch_python():
    return "/usr/bin/python3"


def run_page(page, blocks, args, env):
    runnable = []
    for b in blocks:
        if b.options == "needs fashion-mnist" and not os.path.exists(args.fashion_mnist):
            print(f"{b.page}:{b.line}: skipped (no Fashion-MNIST at {args.fashion_mnist})")
            continue
        if b.options == "needs mpirun" and not shutil.which("mpirun", path=env.get("PATH")):
            print(f"{b.page}:{b.line}: skipped (no mpirun on PATH)")
            continue
        if b.options == "needs torch" and not have_torch():
            print(f"{b.page}:{b.line}: skipped (/usr/bin/python3 cannot import torch)")
            continue
        runnable.append(b)
    if not runnable:
        return []
    workdir = tempfile.mkdtemp(prefix="page-", dir=args.workdir)
    script, where = shell_script(runnable)
    script_path = os.path.join(workdir, ".doctest.sh")
    with open(script_path, "w") as f:
        f.write(script)
    start = time.monotonic()
    print(f"=== {page}: {len(runnable)} blocks in {workdir}", flush=True)
    report = os.path.join(workdir, ".doctest-failures")
    env = dict(env, __dt_report=report)
    sys.stdout.flush()
    proc = subprocess.Popen(["bash", "--noprofile", "--norc", script_path], cwd=workdir, env=env,
                            stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        rc = proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return [f"{page}: timed out after {args.timeout} s"]
    reports = open(report).read().splitlines() if os.path.exists(report) else []
    seconds = time.monotonic() - start
    print(f"=== {page}: exit status {rc}, {seconds:.1f} s", flush=True)
    if rc == 0:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        return []
    errors = []
    for rep in reports[:1]:
        _, block_where, lineno, status, command = rep.split(" ", 4)
        mapped = where.get(int(lineno))
        if mapped:
            b, k = mapped
            errors.append(f"{b.page}:{b.line + k}: exit status {status}: {command}\n"
                          f"    (the block's line: {b.lines[k].strip()})")
        else:
            errors.append(f"{block_where}: exit status {status}: {command}")
    if not errors:
        errors.append(f"{page}: the block at {page} exited with status {rc} (an exit in the block)")
    errors[-1] += f"\n    (its folder is kept: {workdir})"
    return errors


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("pages", nargs="*", help="Markdown pages (default: README.md and docs/*.md)")
    p.add_argument("--source", default=os.path.dirname(here), help="the repository's root")
    p.add_argument("--build", default=None, help="the build folder (default: SOURCE/build)")
    p.add_argument("--normlab", default=None, help="the normlab binary (default: BUILD/experiments/normlab)")
    p.add_argument("--workdir", default=None, help="where the pages' temporary folders go")
    p.add_argument("--fashion-mnist", default=FASHION_MNIST, help="the file whose presence means Fashion-MNIST is installed")
    p.add_argument("--readme-max-bytes", type=int, default=12288)
    p.add_argument("--timeout", type=int, default=600, help="seconds per page")
    p.add_argument("--links-only", action="store_true", help="check the links and the README's size only")
    p.add_argument("--list", action="store_true", help="list the runnable blocks and exit")
    p.add_argument("--keep", action="store_true", help="keep every page's folder")
    args = p.parse_args()

    root = os.path.abspath(args.source)
    build = os.path.abspath(args.build or os.path.join(root, "build"))
    pages = args.pages or (["README.md"] + sorted(
        os.path.join("docs", n) for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".md")))
    errors, parsed = [], []
    for page in pages:
        path = os.path.join(root, page)
        if not os.path.isfile(path):
            print(f"doctest_docs.py: no page {path}", file=sys.stderr)
            return 2
        rel = os.path.relpath(path, root)
        blocks, errs, prose = parse_page(path, rel)
        errors += errs + check_links(path, rel, prose, root)
        parsed.append((rel, blocks))
    readme = os.path.join(root, "README.md")
    size = os.path.getsize(readme)
    if size > args.readme_max_bytes:
        errors.append(f"README.md: {size} bytes, more than {args.readme_max_bytes}: move details to docs/")
    if args.list:
        for rel, blocks in parsed:
            for b in blocks:
                print(f"{b.page}:{b.line}: {b.options or 'sh'} ({len(b.lines)} lines)")
        return 0
    print(f"README.md: {size} bytes (at most {args.readme_max_bytes}); links of {len(parsed)} pages checked")
    if not args.links_only:
        normlab = os.path.abspath(args.normlab or os.path.join(build, "experiments", "normlab"))
        if not os.access(normlab, os.X_OK):
            print(f"doctest_docs.py: no normlab binary at {normlab} (build it first)", file=sys.stderr)
            return 2
        if args.workdir:
            os.makedirs(args.workdir, exist_ok=True)
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(normlab) + os.pathsep + env.get("PATH", "")
        env["NORMLAB_SOURCE"] = root
        env["NORMLAB_BUILD"] = build
        start = time.monotonic()
        for rel, blocks in parsed:
            errors += run_page(rel, blocks, args, env)
        print(f"all pages: {time.monotonic() - start:.1f} s")
    for e in errors:
        print(f"FAILED: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
