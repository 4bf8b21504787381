"""The REST API's JSON parser (DEFAULT_PARSER_CLASSES). A module of its own: DRF
imports it while it defines APIView, so it must not import DRF's views."""

from rest_framework import exceptions, parsers

from .datafiles.strict_json import InvalidJSON, json_loads_strict
from .text import storable_problem


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with the rules of every JSON the product reads
    (:func:`~studies.datafiles.json_loads_strict`): nesting too deep for Python's
    parser, NaN, Infinity and overflowing numbers are a 400, not a 500; so is a key
    the database cannot store (``storable_problem``: views name unknown keys back,
    and an unpaired surrogate cannot even be written out). Values are the fields'
    to check."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})
        try:
            text = stream.read().decode(encoding)
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"JSON parse error - not {encoding} text") from exc
        try:
            value = json_loads_strict(text)
        except InvalidJSON as exc:
            where = f" ({exc.where})" if exc.position else ""
            raise exceptions.ParseError(f"JSON parse error - {exc.message}{where}") from None
        if problem := _key_problem(value):
            raise exceptions.ParseError(f"JSON parse error - a key of the JSON body {problem}")
        return value


def _key_problem(value) -> str | None:
    """Why a key of parsed JSON ``value`` cannot be stored, or None (no recursion: the
    parser already bounded the nesting)."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key in value:
                if problem := storable_problem(key):
                    return problem
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None
