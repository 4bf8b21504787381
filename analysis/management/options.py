"""Command-line options shared by the analysis commands."""


def add_judgement_options(parser) -> None:
    """``--exclude-source NAME`` (repeatable) and ``--include-expired``: which judgements
    count, as the analysis parameters ``excluded_sources`` and ``include_expired`` say
    (``analyze``, ``export_items``)."""
    parser.add_argument(
        "--exclude-source",
        action="append",
        default=[],
        metavar="NAME",
        help="Leave out a reflection source (repeatable), e.g. --exclude-source BART.",
    )
    parser.add_argument(
        "--include-expired",
        action="store_true",
        help="Also count the answers of batches that expired before submission.",
    )
