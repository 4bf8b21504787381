"""JSON limited to what PostgreSQL's jsonb stores.

Python's json module accepts NaN, Infinity, numbers that overflow and a key given
twice in one object (the last one silently wins, as a repeated CSV column would), and
raises RecursionError or ValueError rather than JSONDecodeError for deep nesting and
overlong integers. :func:`json_loads_strict` refuses all of them with :class:`InvalidJSON`,
located (line and column, both from 1) where the parser can say.
"""

import json
import math
import re

from ..text import storable_problem

_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s"\[\]{},:]+', re.DOTALL)


class InvalidJSON(Exception):
    def __init__(self, message: str, position: tuple[int, int] | None = None):
        super().__init__(message)
        self.message = message
        self.position = position  # (line, column), both from 1

    @property
    def where(self) -> str:
        """``line L, column C``, or ``file`` when the position is unknown."""
        return f"line {self.position[0]}, column {self.position[1]}" if self.position else "file"


class _Unstorable(Exception):
    def __init__(self, token: str, message: str):
        super().__init__(message)
        self.token = token
        self.message = message


def _reject_constant(token: str):
    raise _Unstorable(token, "NaN and Infinity are not allowed")


def _too_large(token: str) -> _Unstorable:
    shown = token if len(token) <= 20 else f"{token[:20]}..."
    return _Unstorable(token, f"number too large: {shown}")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _too_large(token)
    return value


def _bounded_int(token: str) -> int:
    try:
        return int(token)
    except ValueError:  # more digits than sys.get_int_max_str_digits()
        raise _too_large(token) from None


class _DuplicateKey(Exception):
    pass


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    result = dict(pairs)
    if len(result) < len(pairs):  # the error path only: find the first repeated key
        seen = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key, ensure_ascii=False)
                raise _DuplicateKey(f"key {shown} appears twice in one object")
            seen.add(key)
    return result


def json_loads_strict(text: str):
    """``json.loads`` that raises InvalidJSON for anything jsonb cannot store."""
    try:
        return json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_object_without_duplicates,
        )
    except json.JSONDecodeError as exc:
        raise InvalidJSON(exc.msg, (exc.lineno, exc.colno)) from None
    except RecursionError:
        raise InvalidJSON("nested too deeply") from None
    except _DuplicateKey as exc:
        raise InvalidJSON(str(exc)) from None
    except _Unstorable as exc:
        # The parser reads left to right and stops at the first bad token, so that
        # token is the first one outside strings that starts like it.
        position = next(
            (
                m.start()
                for m in _JSON_TOKEN.finditer(text)
                if m.group().startswith(exc.token) and not m.group().startswith('"')
            ),
            None,
        )
        if position is None:
            raise InvalidJSON(exc.message) from None
        located = json.JSONDecodeError(exc.message, text, position)
        raise InvalidJSON(exc.message, (located.lineno, located.colno)) from None


def json_value_problem(value, max_depth: int) -> str | None:
    """Why parsed JSON ``value`` cannot be stored (a string PostgreSQL refuses, or
    nesting deeper than ``max_depth``, which keeps every later json.dumps of it far
    from Python's recursion limit), or None."""
    stack = [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in (*value, *value.values()))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str) and (problem := storable_problem(value)):
            return problem
    return None
