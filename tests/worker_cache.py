"""The cache of one test process when several run the suite at once (`make test` runs
it in parallel with pytest-xdist): each process keeps its keys under a prefix of its
own (``KEY_PREFIX``, set in ``tests/conftest.py``) in the one Redis they share, and
``clear()`` deletes only those, so a test emptying the cache never empties another
process's in the middle of its test."""

from django.core.cache.backends.redis import RedisCache


class WorkerRedisCache(RedisCache):
    def clear(self) -> bool:
        client = self._cache.get_client(None, write=True)
        keys = list(client.scan_iter(match=f"{self.key_prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        return True
