"""The configuration text a granflow file stores, as a flat dict of strings."""
import re

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<line>//[^\r\n]*)
  | (?P<block>/\*.*?\*/)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<vector><[^>]*>)
  | (?P<punct>[{};])
  | (?P<word>[^\s{};"<]+)
""", re.VERBOSE | re.DOTALL)


def _tokens(text):
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError("configuration: cannot read %r" % text[pos:pos + 20])
        pos = m.end()
        kind = m.lastgroup
        if kind in ("space", "line", "block"):
            continue
        yield kind, m.group()


def _unquote(s):
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def parse_parameters(text):
    """{"Block.key": "value"} for every key of `text`; values as written (strings unquoted,
    vectors as "< a, b, c >"). A block that occurs more than once in its parent is numbered from
    0 in file order ("Materials.Material[1].name"), so that names keep their meaning when blocks
    are added."""
    toks = list(_tokens(text))

    def block(i, prefix):
        """Reads the items from toks[i] to the matching "}" (or the end); returns them and the
        position after."""
        items = []  # (kind, name, value-or-items)
        while i < len(toks) and toks[i] != ("punct", "}"):
            kind, name = toks[i]
            if kind != "word":
                raise ValueError("configuration: a name was expected, not %r" % name)
            if i + 1 < len(toks) and toks[i + 1] == ("punct", "{"):
                sub, i = block(i + 2, prefix)
                if i >= len(toks):
                    raise ValueError("configuration: block %s is not closed" % name)
                items.append(("block", name, sub))
                i += 1
                continue
            parts = []
            i += 1
            while i < len(toks) and toks[i] != ("punct", ";"):
                k, v = toks[i]
                if k == "punct":
                    raise ValueError("configuration: key %s has no ';'" % name)
                parts.append(_unquote(v) if k == "string" else v)
                i += 1
            items.append(("key", name, " ".join(parts)))
            i += 1
        return items, i

    items, i = block(0, "")
    if i < len(toks):
        raise ValueError("configuration: unbalanced '}'")
    out = {}

    def flatten(items, prefix):
        counts = {}
        for kind, name, _ in items:
            if kind == "block":
                counts[name] = counts.get(name, 0) + 1
        seen = {}
        for kind, name, val in items:
            if kind == "key":
                out[prefix + name] = val
            else:
                n = seen.get(name, 0)
                seen[name] = n + 1
                tag = "%s[%d]" % (name, n) if counts[name] > 1 else name
                flatten(val, prefix + tag + ".")

    flatten(items, "")
    return out
