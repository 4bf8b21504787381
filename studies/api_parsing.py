"""The REST API's JSON parser (DEFAULT_PARSER_CLASSES). A module of its own: DRF
imports it while it defines APIView, so it must not import DRF's views."""

from rest_framework import exceptions, parsers

from .datafiles.strict_json import InvalidJSON, json_loads_strict


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with the rules of every JSON the product reads
    (:func:`~studies.datafiles.json_loads_strict`): nesting too deep for Python's
    parser, NaN, Infinity and overflowing numbers are a 400, not a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})
        try:
            text = stream.read().decode(encoding)
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"JSON parse error - not {encoding} text") from exc
        try:
            return json_loads_strict(text)
        except InvalidJSON as exc:
            where = f" ({exc.where})" if exc.position else ""
            raise exceptions.ParseError(f"JSON parse error - {exc.message}{where}") from None
