"""The one YAML loader accel reads user files with: plain data, every problem one short line.

On top of ``yaml.SafeLoader`` (no Python objects), with YAML 1.2's core schema for plain
(unquoted) values instead of PyYAML's YAML 1.1 rules (``_Loader``): only ``true`` and
``false`` are booleans (``NO``, ``SE``, ``yes``, ``off`` are strings: country codes stay
country codes), ``0755`` is the integer 755 (``0o755`` octal, ``0x1F`` hexadecimal), ``1:20`` and
``2024-01-01`` are strings, ``1e3`` is a number, and ``null``, ``~`` or nothing is null;

- a key given twice in one mapping is an error naming it and its lines (PyYAML would keep the
  last one silently);
- tags (``!!python/object``, ``!!str``, ``!custom``) are not allowed: a workflow file is plain
  settings;
- anchors and aliases may be used, but the document may not expand to more than
  :data:`MAX_NODES` values, so an alias bomb ("billion laughs") is refused before anything
  is built from it;
- what an error quotes from the file is capped (:func:`quote`);
- a file larger than :data:`MAX_BYTES` is refused before it is parsed (:func:`accel.config.read_workflow_file`):
  PyYAML takes minutes and gigabytes over a 50 MB list before the value count could refuse it;
- flow collections (``[...]``, ``{...}``) nested more than :data:`MAX_DEPTH` deep are refused
  before PyYAML sees them: its scanner takes time quadratic in the depth (minutes for a 200 KB
  line of brackets); blocks nested too deeply end in Python's recursion limit, refused too.
"""

from __future__ import annotations

import re
import reprlib
from typing import Any

import yaml

from accel.errors import AccelError

#: Most values (scalars, lists and mappings, counted with aliases expanded) in one document.
MAX_NODES = 100_000
#: Largest file read as YAML: a workflow file is a page of settings.
MAX_BYTES = 1 << 20
#: Most characters any error quotes from a user's file.
QUOTE_CHARS = 80
#: Deepest nesting of flow collections (``[`` and ``{``) a file may have.
MAX_DEPTH = 64

_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 4
_repr.maxstring = _repr.maxother = QUOTE_CHARS


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)``, with nested and long values cut short (``[1, 2, ...]``), at most ``limit`` characters."""
    text = _repr.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Refused(Exception):
    pass


def _check_depth(text: str) -> None:
    """Refuse flow collections nested deeper than :data:`MAX_DEPTH`, scanning the text once
    (brackets inside quotes and comments do not count)."""
    depth, quote, previous = 0, "", "\n"
    for i, char in enumerate(text):
        if quote:  # a comment ends with its line, a quoted scalar with its quote
            quote = "" if char == ("\n" if quote == "#" else quote) else quote
        elif (char in "'\"" and previous in " \t\n[{,:-") or (char == "#" and previous in " \t\n"):
            quote = char  # a quoted scalar or a comment begins (an apostrophe inside a word does not)
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, i) + 1
                raise _Refused(f"nested more than {MAX_DEPTH} deep (line {line}); a workflow file holds plain settings")
        elif char in "]}":
            depth = max(depth - 1, 0)
        previous = char


def _check_tags(text: str) -> None:
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if (tag := getattr(event, "tag", None)) is not None:
            shown = tag.replace("tag:yaml.org,2002:", "!!")
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise _Refused(f"YAML tags are not allowed ({shown} at line {event.start_mark.line + 1}); write plain values")


def _check_size(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand to more than MAX_NODES values (counted without expanding)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        if id(node) not in sizes:
            sizes[id(node)] = 1  # a node that holds itself (a recursive alias) counts once
            pairs = node.value if isinstance(node, yaml.MappingNode) else ()
            children = node.value if isinstance(node, yaml.SequenceNode) else [n for pair in pairs for n in pair]
            sizes[id(node)] = min(1 + sum(map(size, children)), MAX_NODES + 1)
        return sizes[id(node)]

    if size(root) > MAX_NODES:
        raise _Refused(f"the file expands to more than {MAX_NODES:,} values through its aliases (an alias bomb?)")


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2's core schema: the plain scalars that are null, booleans,
    integers and floats (https://yaml.org/spec/1.2.2/#1032-tag-resolution); every other plain
    scalar is a string (no sexagesimal ``1:20``, ``0755`` decimal)."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}  # none of YAML 1.1's

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        return int(text, 0 if text[:2] in ("0o", "0x") else 10)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # "<<: *base": merged keys may be overridden by the mapping's own
            key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise _Refused(f"key {quote(key, 40)} is given twice (lines {seen[key]} and {line}); keep one")
            except TypeError:  # an unhashable key: SafeLoader says so itself
                break
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_CORE = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", list("~nN") + [""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+.0123456789"),
    ),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", ["<"]),  # "<<: *base" stays
)
for _tag, _pattern, _first in _CORE:
    _Loader.add_implicit_resolver(_tag, re.compile(_pattern), _first)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def load(text: str, source: str) -> Any:
    """The data in ``text``; an :class:`AccelError` naming ``source`` for anything refused."""
    try:
        _check_depth(text)
        _check_tags(text)
        loader = _Loader(text)
        if (root := loader.get_single_node()) is None:
            return None
        _check_size(root)
        return loader.construct_document(root)
    except _Refused as exc:
        raise AccelError(f"{source}: {exc}") from None
    except RecursionError:
        raise AccelError(f"{source}: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None)
        detail = f": {problem if len(problem) <= 60 else problem[:57] + '...'}" if problem else ""
        raise AccelError(f"{source} is not valid YAML{where}{detail}") from None
