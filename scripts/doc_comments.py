#!/usr/bin/env python3
# Turns the // comments that document a public declaration of a header into Doxygen's /// (and a
# trailing // comment of a public member into ///<), in place, for the API reference (make docs).
# Usage: python3 scripts/doc_comments.py HEADER...   (e.g. a header merged with // comments: the docs
# test then names what is still undocumented).
#
# Converted: a block of // lines directly above a declaration at namespace or class scope, outside
# private sections. Left as they are: file-top comments (a #pragma or #include follows), section
# banners (// ---- x ----) and their blocks, comments inside function bodies, NOLINT comments, and
# blocks already ///. Running it twice changes nothing. Check the result with `make docs`: a
# trailing comment continued on the next line, or one on a line declaring two variables, needs a
# hand (Doxygen gives ///< to the last variable only).
import re
import sys

BANNER = re.compile(r'^\s*//\s*-{3,}')
ACCESS = re.compile(r'^\s*(public|private|protected)\s*:')


def strip_code(line):
    """The code part of a line: strings and char literals blanked, trailing // comment removed."""
    out = []
    i = 0
    n = len(line)
    comment_at = None
    while i < n:
        c = line[i]
        if c in '"\'':
            q = c
            out.append(c)
            i += 1
            while i < n and line[i] != q:
                if line[i] == '\\':
                    i += 1
                i += 1
            out.append(q)
            i += 1
            continue
        if line.startswith('//', i):
            comment_at = i
            break
        if line.startswith('/*', i):
            j = line.find('*/', i + 2)
            i = n if j < 0 else j + 2
            continue
        out.append(c)
        i += 1
    return ''.join(out), comment_at


def is_decl_start(code):
    s = code.strip()
    if not s or s.startswith('#') or s.startswith('}') or s.startswith('{'):
        return False
    if re.match(r'(namespace\b|HWY_BEFORE_NAMESPACE|HWY_AFTER_NAMESPACE|static_assert\b)', s):
        return False
    if ACCESS.match(s):
        return False
    return True


def convert(text):
    lines = text.split('\n')
    # stack of (kind, access) with kind in {'file','ns','class','body'}
    stack = [('file', 'public')]
    stmt = ''  # code since the last ; { } at the current level
    block = []  # indices of pending comment lines
    out = list(lines)
    for idx, line in enumerate(lines):
        stripped = line.strip()
        scope = stack[-1][0]
        if stripped.startswith('//'):
            block.append(idx)
            continue
        code, comment_at = strip_code(line)
        # the pending block documents this line?
        if block:
            if (scope in ('file', 'ns', 'class') and stack[-1][1] != 'private' and is_decl_start(code)
                    and not any(BANNER.match(lines[b]) for b in block)
                    and not any(lines[b].lstrip().startswith('///') for b in block)
                    and stmt.strip() == ''):
                for b in block:
                    out[b] = re.sub(r'^(\s*)//', r'\1///', lines[b], count=1)
            block = []
        # trailing comment on a complete member declaration at class/ns scope
        if comment_at is not None and scope in ('ns', 'class', 'file'):
            c = code.rstrip()
            trailing = line[comment_at:]
            if (c and not c.lstrip().startswith('}') and (c.endswith(';') or c.endswith('}') or c.endswith(','))
                    and stmt.strip() == '' and 'NOLINT' not in trailing and not trailing.startswith('///')
                    and stack[-1][1] == 'public' and is_decl_start(code)):
                out[idx] = line[:comment_at] + '///< ' + trailing[2:].lstrip()
        # access specifiers
        m = ACCESS.match(code)
        if m and stack[-1][0] == 'class':
            stack[-1] = ('class', m.group(1))
            code = code[m.end():]
        # braces
        for ch in code:
            if ch == '{':
                s = stmt
                if re.search(r'\bnamespace\b', s) or re.search(r'extern\s*"', s):
                    kind = 'ns'
                elif re.search(r'\b(class|struct|union|enum)\b', s) and '(' not in s and '=' not in s:
                    kind = 'class'
                else:
                    kind = 'body'
                acc = 'private' if re.search(r'\bclass\b', s) and not re.search(r'\benum\s+class\b', s) else 'public'
                stack.append((kind, acc))
                stmt = ''
            elif ch == '}':
                if len(stack) > 1:
                    stack.pop()
                stmt = ''
            elif ch == ';':
                stmt = ''
            else:
                stmt += ch
        if stmt.strip() == '' :
            stmt = ''
        else:
            stmt += ' '
    return '\n'.join(out)


for path in sys.argv[1:]:
    with open(path) as f:
        text = f.read()
    new = convert(text)
    if new != text:
        with open(path, 'w') as f:
            f.write(new)
