"""``nclx.types.parse``: a type string -> a type object.

Grammar (whitespace is free between tokens; ``str(parse(s))`` writes the
canonical spelling: ``" * "``, ``", "``, ``": "``)::

    type     := dim "*" type | option | measure
    dim      := INT | "var" | "strided"
    option   := "?" measure | "option" "[" type "]"
    measure  := SCALAR | "datetime64" "[" UNIT "]" | "timedelta64" "[" UNIT "]"
              | "string" | "bytes" | ("string" | "bytes") "[" INT "]"
              | "{" [field ("," field)*] "}" | "(" [type ("," type)*] ")"
              | "categorical" "[" "type" "=" type "]"
              | "union" "[" type ("," type)* "]" | "pointer" "[" type "]"
    field    := (IDENT | JSON-STRING) ":" type

An error names the 1-based column of the first character that does not fit.
"""
import json
import re

from nclx.errors import NclxError
from nclx.types.datashape import (SCALAR_NAMES, Categorical, Dim, Option, Pointer, Record,
                                  Scalar, String, Union)

__all__ = ["parse", "TypeStringError"]


class TypeStringError(NclxError, ValueError):
    """A type string that does not parse; ``.column`` is 1-based."""

    def __init__(self, text, column, message):
        self.text, self.column = text, column
        # the text around the column only: a long string (a record of
        # thousands of fields) was repeated whole in the message (review)
        lo = max(0, column - 1 - 60)
        hi = min(len(text), column - 1 + 60)
        shown = ("..." if lo else "") + text[lo:hi] + ("..." if hi < len(text) else "")
        caret = " " * (column - 1 - lo + (3 if lo else 0)) + "^"
        super().__init__(f"column {column}: {message}\n  {shown}\n  {caret}")


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<int>[0-9]+)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<punct>[*?\[\](){}:,=])
""", re.VERBOSE)

# low enough that str()/repr() of the deepest type (about six Python frames a
# level for an option of a record) stay far inside the recursion limit
_MAX_DEPTH = 100
_INT64_MAX = 2**63 - 1


class _Parser:
    def __init__(self, text):
        if not isinstance(text, str):
            raise TypeError(f"a type string must be str, not {type(text).__name__}")
        self.text = text
        self.tokens = []      # (kind, value, column)
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                self.fail(pos + 1, f"unexpected character {text[pos]!r}")
            if m.lastgroup != "ws":
                self.tokens.append((m.lastgroup, m.group(), pos + 1))
            pos = m.end()
        self.tokens.append(("end", "", len(text) + 1))
        self.i = 0
        self.depth = 0

    def fail(self, column, message):
        raise TypeStringError(self.text, column, message)

    @property
    def tok(self):
        return self.tokens[self.i]

    def peek(self, k=1):
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def take(self, value=None, kind=None, what=None):
        t = self.tok
        if (value is not None and t[1] != value) or (kind is not None and t[0] != kind):
            want = what or (repr(value) if value is not None else kind)
            got = "the end of the string" if t[0] == "end" else repr(t[1])
            self.fail(t[2], f"expected {want}, found {got}")
        self.i += 1
        return t

    # ---------------------------------------------------------- grammar
    def parse(self):
        if self.tok[0] == "end":
            self.fail(1, "empty type string")
        t = self.type()
        if self.tok[0] != "end":
            self.fail(self.tok[2], f"unexpected {self.tok[1]!r} after a complete type")
        return t

    def integer(self, digits, col, what):
        """``digits`` as an int (at most 19 digits: int64), else a
        TypeStringError at ``col``."""
        if len(digits) > 19:
            self.fail(col, f"{what} of {len(digits)} digits is too large (int64 at most)")
        if int(digits) > _INT64_MAX:
            # (19 digits reach 9999999999999999999, past int64; found by review)
            self.fail(col, f"{what} of {digits} is too large (int64 at most: {_INT64_MAX})")
        return int(digits)

    def type(self):
        kind, value, col = self.tok
        # an option, a record or a tuple costs str() about twice the frames
        # of a dimension: it counts two levels
        # (a scalar, the leaf, counts none)
        step = 2 if value in ("?", "{", "(") or (kind == "name" and value == "option") else \
            0 if kind == "name" and value in SCALAR_NAMES else 1
        if value == "?" and self.peek()[1] in ("{", "("):
            step = 4      # the option and the record or tuple it holds (review 27:
            #               a record after '?' counted nothing)
        self.depth += step
        if self.depth > _MAX_DEPTH:
            self.fail(col, f"type nested deeper than {_MAX_DEPTH} levels")
        try:
            if kind == "int" or (kind == "name" and value in ("var", "strided")
                                 and self.peek()[1] == "*"):
                self.i += 1
                self.take("*", what="'*' after a dimension")
                element = self.type()
                if kind == "int":
                    return Dim("fixed", element, self.integer(value, col, "a dimension"))
                return Dim(value, element)
            if value == "?":
                self.i += 1
                content = self.measure(after_question=True)
                return Option(content)
            if kind == "name" and value == "option" and self.peek()[1] == "[":
                self.i += 2
                content = self.type()
                self.take("]", what="']' closing option[")
                return Option(content)
            return self.measure()
        finally:
            self.depth -= step

    def measure(self, after_question=False):
        kind, value, col = self.tok
        if kind == "punct" and value == "{":
            return self.record()
        if kind == "punct" and value == "(":
            return self.tuple()
        if kind != "name":
            what = "a type after '?'" if after_question else "a type"
            got = "the end of the string" if kind == "end" else repr(value)
            self.fail(col, f"expected {what}, found {got}")
        if after_question and value in ("var", "strided"):
            self.fail(col, "an optional dimension is written option[...], not ?" + value)
        self.i += 1
        if value in ("datetime64", "timedelta64"):
            if self.tok[1] == "[":
                self.i += 1
                unit = self.take(what="a time unit such as s or ms")
                if unit[0] not in ("name", "int"):
                    self.fail(unit[2], f"expected a time unit, found {unit[1]!r}")
                text = unit[1]
                if unit[0] == "int":      # e.g. 10s: an int then a name
                    text += self.take(kind="name", what="a time unit after the count")[1]
                if not re.fullmatch(r"(?:[1-9][0-9]*)?(Y|M|W|D|h|m|s|ms|us|ns|ps|fs|as)", text):
                    # (a count of 0, "datetime64[0s]", parsed and then failed
                    # deep inside NumPy with an OverflowError; found by review)
                    self.fail(unit[2], f"unknown time unit {text!r} (a unit, optionally after "
                              "a count from 1 without leading zeros: s, ms, 10s)")
                self.take("]", what=f"']' closing {value}[")
                return Scalar(f"{value}[{text}]")
            return Scalar(value)
        if value in SCALAR_NAMES:
            return Scalar(value)
        if value in ("string", "bytes"):
            if self.tok[1] == "[":
                self.i += 1
                size = self.take(kind="int", what=f"a width in bytes inside {value}[")
                self.take("]", what=f"']' closing {value}[")
                return String(value, self.integer(size[1], size[2], "a width"))
            return String(value)
        if value in ("categorical", "union", "pointer"):
            self.take("[", what=f"'[' after {value}")
            if value == "categorical":
                self.take("type", what="'type=' inside categorical[")
                self.take("=", what="'=' after categorical[type")
                content = self.type()
                self.take("]", what="']' closing categorical[")
                return Categorical(content)
            if value == "pointer":
                target = self.type()
                self.take("]", what="']' closing pointer[")
                return Pointer(target)
            contents = [self.type()]
            while self.tok[1] == ",":
                self.i += 1
                contents.append(self.type())
            self.take("]", what="',' or ']' in union[")
            return Union(tuple(contents))
        self.fail(col, f"unknown type name {value!r}")

    def record(self):
        self.take("{")
        names, fields, seen = [], [], set()     # seen: O(1) duplicate checks
        if self.tok[1] != "}":
            while True:
                kind, value, col = self.tok
                if kind == "name":
                    name = value
                elif kind == "str":
                    try:
                        name = json.loads(value)
                    except ValueError as exc:
                        self.fail(col, f"bad escape in the field name {value}: {exc.msg}")
                else:
                    got = "the end of the string" if kind == "end" else repr(value)
                    self.fail(col, f"expected a field name, found {got}")
                if name in seen:
                    self.fail(col, f"duplicate field name {name!r}")
                self.i += 1
                self.take(":", what=f"':' after field name {name!r}")
                names.append(name)
                seen.add(name)
                fields.append(self.type())
                if self.tok[1] != ",":
                    break
                self.i += 1
        self.take("}", what="',' or '}' in a record")
        return Record(tuple(fields), tuple(names))

    def tuple(self):
        self.take("(")
        fields = []
        if self.tok[1] != ")":
            fields.append(self.type())
            while self.tok[1] == ",":
                self.i += 1
                fields.append(self.type())
        self.take(")", what="',' or ')' in a tuple")
        return Record(tuple(fields), None)


def parse(s):
    """Parse a datashape type string into a type object.

    >>> str(parse("3 * var * int64"))
    '3 * var * int64'

    Raises :class:`TypeStringError` (a ValueError) naming the 1-based
    column of the first character that does not fit.
    """
    return _Parser(s).parse()
