"""The benchmarks' floor (bench/load): the cheapest possible "save a judgement".

Mounted at ``/bench/floor/`` only when the setting ``BENCH_FLOOR_VIEW`` is on (env
``BENCH_FLOOR_VIEW=true``); never in production. One POST = one INSERT of a
judgement-shaped row over Django's usual connection (same pool, same
``CONN_MAX_AGE``), into ``bench_floor_judgement``: a copy of the judgements table
with its defaults, checks and indexes but no foreign keys, created by
``floor_table_create``. Nothing is read first, nothing is rendered, and the answer is a
redirect like the save's: the save path's throughput is compared with this.
"""

import secrets

from django.db import connection
from django.http import HttpRequest, HttpResponseRedirect
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

FLOOR_TABLE = "bench_floor_judgement"
FLOOR_NEXT = "/bench/floor/?saved=1"


def floor_table_create() -> None:
    """(Re)create the floor's table like ``studies_judgement`` (PostgreSQL only)."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")
        cursor.execute(f"CREATE TABLE {FLOOR_TABLE} (LIKE studies_judgement INCLUDING ALL)")


@csrf_exempt
@require_POST
def floor(request: HttpRequest) -> HttpResponseRedirect:
    coherent = request.POST.get("coherent") == "yes"
    empathy = int(request.POST["empathy"]) if coherent and request.POST.get("empathy") else None
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {FLOOR_TABLE} (assignment_id, reflection_id, coherent, error_flags,"
            " most_evident_bit, empathy, seconds_spent, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, NULL, %s, NULL, now(), now())",
            [secrets.randbits(62), secrets.randbits(62), coherent, 0 if coherent else 1, empathy],
        )
    # Answered as the save alone is answered (the form POST's redirect to the next
    # item), so the client does the same work on both: httpx prepares the redirect's
    # request (URL, cookies) even when it does not follow it (bench/load/README.md).
    return HttpResponseRedirect(FLOOR_NEXT)
