"""The bound on every function under plugins/: cyclomatic complexity at most 25 and at most 100 lines (radon).

Usage: complexity.py [PATH ...]   (default: plugins). Prints each function over the bound and exits 1 if there is one.
Part of `make lint`; the reason for the bound is in docs/architecture.md.
"""
import sys

from radon.complexity import cc_visit

MAX_CC = 25
MAX_LINES = 100


def _functions(blocks):
    for block in blocks:
        if block.letter in ("F", "M"):
            yield block
        yield from getattr(block, "methods", None) or []
        yield from getattr(block, "closures", None) or []


def over_bound(paths):
    import os
    found = []
    for root in paths:
        files = [root] if root.endswith(".py") else [
            os.path.join(d, f) for d, _dirs, fs in os.walk(root) for f in fs if f.endswith(".py")]
        for path in sorted(files):
            with open(path, encoding="utf-8") as fh:
                source = fh.read()
            seen = set()
            for fn in _functions(cc_visit(source)):
                if (fn.lineno, fn.fullname) in seen:
                    continue
                seen.add((fn.lineno, fn.fullname))
                lines = fn.endline - fn.lineno + 1
                if fn.complexity > MAX_CC or lines > MAX_LINES:
                    found.append("%s:%d %s: complexity %d, %d lines" % (path, fn.lineno, fn.fullname, fn.complexity, lines))
    return found


def main(argv):
    found = over_bound(argv or ["plugins"])
    for line in found:
        print(line)
    if found:
        print("%d function(s) over the bound (complexity > %d or > %d lines): split them" % (len(found), MAX_CC, MAX_LINES))
        return 1
    print("complexity: every function within complexity %d and %d lines" % (MAX_CC, MAX_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
