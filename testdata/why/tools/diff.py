#!/usr/bin/env python3
"""change.diff of a pair: `diff -ruN before after`, except that binary files (images, fonts) and generated
files only one side has that are over 16 KB (bundles, stylesheets) are named with their sizes instead
of inlined. The rest applies with patch -p1 to the before tree.
usage: diff.py BEFORE_DIR AFTER_DIR > change.diff"""
import filecmp, os, subprocess, sys

B, A = sys.argv[1], sys.argv[2]


def files(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def big(p):
    if not os.path.exists(p):
        return False
    if os.path.getsize(p) > 16384:
        return True
    return b'\0' in open(p, 'rb').read(4096)


for rel in sorted(files(B) | files(A)):
    b, a = os.path.join(B, rel), os.path.join(A, rel)
    if os.path.exists(b) and os.path.exists(a) and filecmp.cmp(b, a, shallow=False):
        continue
    binary = lambda p: os.path.exists(p) and b'\0' in open(p, 'rb').read(4096)
    if binary(b) or binary(a) or (big(b) or big(a)) and not (os.path.exists(b) and os.path.exists(a)):
        size = lambda p: '%d bytes' % os.path.getsize(p) if os.path.exists(p) else 'absent'
        print('Generated or binary file %s: before %s, after %s (made by tools/variants.py)' % (rel, size(b), size(a)))
        continue
    r = subprocess.run(['diff', '-uN', '--label', 'before/' + rel, '--label', 'after/' + rel, b, a], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
