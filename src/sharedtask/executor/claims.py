"""A job's claim in Redis: one worker runs a job while it lives, whatever the broker delivers.

Why: kombu's visibility timeout is the only thing that keeps a Redis-delivered job with one
worker, and it fails in one case the field test of issue 39 met: after a broker restart a
busy worker prefetched a queued job, held it in its buffer past the timeout, and the broker
delivered it to an idle worker too; both ran it at once. A claim closes that:

- ``take``: before any container starts, a worker takes ``sharedtask:claim:<task id>`` with
  ``SET NX PX`` (redis.io/commands/set: NX sets only a missing key, atomically). Its value is
  a fencing token (``INCR sharedtask:fence:<task id>``, a new number per taker) and the
  worker's name. A delivery that finds the claim held by a live worker is acknowledged and
  dropped (``celery.exceptions.Ignore``: no result is stored, so the holder's result stands);
- ``refresh``: the holder renews the claim's time to live (half the visibility timeout)
  every quarter of the timeout (a heartbeat), only while the value is still its own
  (compare-and-expire in one Lua script, as the Redis docs' lock pattern does:
  redis.io/docs/manual/patterns/distributed-locks); a claim that lapsed untaken (a late
  heartbeat) is taken again. A worker that dies stops renewing: its claim expires within
  half the visibility timeout, before the broker hands its unacknowledged job out again
  (kombu waits the whole timeout after the last renewal of the same heartbeat);
- ``finish``: a run that ended marks the claim ``done`` (kept as long as results are), unless
  another worker holds it; a later copy of the message is then dropped, even before
  the result is stored. A run whose claim was taken meanwhile (its worker stalled past the
  lease) is *fenced*: its result is dropped, the newer holder's stands.
- ``release``: a refused job (nothing ran) lets go, so the coordinator's re-send can run.

The key is the Celery task id, which the coordinator namespaces per server
(:meth:`sharedtask.executor.remote.CeleryExecutor.task_id`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sharedtask.executor.redis_keys import KEY_PREFIX, RESULT_TTL

DONE = "done"

# compare-and-expire: renew a claim that is still the caller's, or take it again if it lapsed
# (a late heartbeat) while nobody else took it
_REFRESH = ("local v = redis.call('get', KEYS[1]) "
            "if v == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end "
            "if not v then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end return 0")
# compare-and-set: mark done a claim that is still the caller's or lapsed untaken; never another's
_FINISH = ("local v = redis.call('get', KEYS[1]) "
           "if v == ARGV[1] or not v then redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1 end "
           "return 0")
# compare-and-delete
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def claim_key(task_id: str) -> str:
    return f"{KEY_PREFIX}claim:{task_id}"


@dataclass
class Claim:
    """This worker's hold on one job: the value it wrote (fencing token and name)."""

    client: Any
    task_id: str
    value: str
    lease_ms: int

    @property
    def token(self) -> int:
        return int(self.value.split(":", 1)[0])

    def refresh(self) -> bool:
        """Renew the lease; False when the claim is no longer this worker's."""
        return bool(self.client.eval(_REFRESH, 1, claim_key(self.task_id), self.value, self.lease_ms))

    def finish(self) -> bool:
        """Mark the job done; False when another worker holds the claim now (this run is fenced)."""
        return bool(self.client.eval(_FINISH, 1, claim_key(self.task_id), self.value,
                                     f"{DONE}:{self.value}", RESULT_TTL))

    def release(self) -> None:
        self.client.eval(_RELEASE, 1, claim_key(self.task_id), self.value)


def take(client: Any, task_id: str, worker: str, lease_seconds: float) -> tuple[Claim | None, str]:
    """This worker's claim on ``task_id``, or (None, what holds it: ``<token>:<worker>`` or ``done:…``)."""
    lease_ms = max(1000, int(lease_seconds * 1000))
    token = int(client.incr(f"{KEY_PREFIX}fence:{task_id}"))
    client.expire(f"{KEY_PREFIX}fence:{task_id}", RESULT_TTL)
    value = f"{token}:{worker}"
    for _ in range(3):  # a claim that lapsed between the SET and the GET is tried again
        if client.set(claim_key(task_id), value, nx=True, px=lease_ms):
            return Claim(client, task_id, value, lease_ms), value
        held = client.get(claim_key(task_id))
        if held is not None:
            return None, held.decode("utf-8", "replace") if isinstance(held, bytes) else str(held)
    return None, "a claim that came and went three times"
