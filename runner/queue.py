"""The RQ queue of game sets: JSON-serialized jobs whose id is the game set id."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import redis
from redis.lock import Lock
from rq import Queue, Retry, Worker
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from arena.config import env
from arena.errors import ArenaError

# A set is two games of at most a few minutes each (time banks included); a job that runs
# far longer than that is stuck, and RQ kills it.
GAME_SET_TIMEOUT = 30 * 60
# Retries after a failure or after the worker died; each attempt is counted in the database.
# A retry goes to the front of the queue: behind a big tournament's other sets it waited for
# minutes, a killed worker's set last of all.
GAME_SET_RETRIES = 2
# Finished jobs only matter to RQ's dashboards; the result lives in the database.
RESULT_TTL = 600
FAILURE_TTL = 7 * 24 * 3600

RUN_GAME_SET = "runner.jobs.run_game_set"
NIGHTLY = "runner.jobs.nightly_round_robin"
# What RQ accepts as a job id (rq.job.Job); a job's id is its set's.
JOB_ID = re.compile(r"[A-Za-z0-9_-]+")
# The only functions a worker runs: RQ would import and call whatever a job names.
JOB_FUNCTIONS = frozenset({RUN_GAME_SET, NIGHTLY})


def queue_name() -> str:
    return env("ARENA_QUEUE")


def arena_queue(connection: redis.Redis, name: str | None = None) -> Queue:
    return Queue(name or queue_name(), connection=connection, serializer=JSONSerializer)


def workers_on(connection: redis.Redis, name: str | None = None) -> int:
    """How many workers listen on the arena's queue."""
    return Worker.count(connection=connection, queue=arena_queue(connection, name))


# Each worker supervisor says which database its workers store sets in, every reconciler pass;
# what was said longer ago than this is forgotten (a supervisor gone).
DATABASES_TTL = 60


def _databases_key(name: str | None) -> str:
    return f"arena:queue:{name or queue_name()}:databases"


def announce_database(connection: redis.Redis, shown_url: str, name: str | None = None) -> None:
    """Say that workers on the queue store sets in the database `shown_url` (password hidden)."""
    key, now = _databases_key(name), time.time()
    with connection.pipeline() as pipe:
        pipe.zadd(key, {shown_url: now})
        pipe.zremrangebyscore(key, "-inf", now - DATABASES_TTL)
        pipe.expire(key, DATABASES_TTL)
        pipe.execute()


def workers_databases(connection: redis.Redis, name: str | None = None) -> list[str]:
    """The databases the queue's workers said they store sets in, within DATABASES_TTL."""
    said = connection.zrangebyscore(_databases_key(name), time.time() - DATABASES_TTL, "+inf")
    return sorted(url.decode() if isinstance(url, bytes) else str(url) for url in said)


def foreign_databases(connection: redis.Redis, shown_url: str) -> list[str]:
    """The databases the queue's workers store sets in if `shown_url` is none of them (sets
    stored there are played by no worker: a shell that lacks their ARENA_DATABASE_URL); else
    [], as when no worker has said."""
    theirs = workers_databases(connection)
    return theirs if shown_url not in theirs else []


def check_workers_database(connection: redis.Redis, shown_url: str) -> None:
    """ArenaError if the queue's workers store sets in another database than `shown_url`."""
    if theirs := foreign_databases(connection, shown_url):
        raise ArenaError(
            f"the workers on queue {queue_name()!r} store game sets in {', '.join(theirs)}, and "
            f"this command in {shown_url}: none of them could play what it queued. Give it "
            "their database (ARENA_DATABASE_URL), or start workers on this one"
        )


def enqueuer_for(shown_url: str) -> Callable[[Sequence[str]], int]:
    """What queues the game sets a command stores in `shown_url`. It reaches Redis and checks
    the queue's workers first, so that a missing Redis, or workers that would never see the
    sets, are reported before anything is stored."""
    from runner import redis_conn

    connection = redis_conn.connect()
    check_workers_database(connection, shown_url)
    queue = arena_queue(connection)
    return lambda ids: enqueue_game_sets(queue, ids)


def fetch_job(connection: redis.Redis, job_id: str) -> Job | None:
    try:
        return Job.fetch(job_id, connection=connection, serializer=JSONSerializer)
    except NoSuchJobError:
        return None


def delete_job(job: Job) -> None:
    """Delete an ended job, as RQ's job.delete(), also in the minute after a killed worker's
    execution expired: RQ 3 keeps such an execution in the job's registry 60 s longer than its
    data, and job.delete() then fails reading it ("Execution ... not found in Redis")."""
    try:
        job.delete()
    except ValueError:
        job.connection.delete(job.execution_registry.key)  # only what could not be read
        job.delete()


def _job_options(set_id: str) -> dict[str, Any]:
    """What every game-set job carries: the set id as argument and as job id, TTLs, retries."""
    return {
        "args": (set_id,),
        "job_id": set_id,
        "result_ttl": RESULT_TTL,
        "failure_ttl": FAILURE_TTL,
        "retry": Retry(max=GAME_SET_RETRIES, enqueue_at_front=True),
        "description": f"game set {set_id}",
    }


def enqueue_game_set(queue: Queue, set_id: str, *, at_front: bool = False) -> Job:
    """Enqueue one game set; the job id is the set id, so a set is never queued twice."""
    return queue.enqueue(
        RUN_GAME_SET, job_timeout=GAME_SET_TIMEOUT, at_front=at_front, **_job_options(set_id)
    )


# Held by the reconciler's pass and by enqueue_game_sets: RQ queues a job id again if asked
# twice, so the two must not both find a new set without a job and both enqueue it.
_ENQUEUE_LOCK = "arena:lock:reconcile:{queue}"
_ENQUEUE_LOCK_TTL = 60


def enqueue_lock(queue: Queue) -> Lock:
    return queue.connection.lock(_ENQUEUE_LOCK.format(queue=queue.name), timeout=_ENQUEUE_LOCK_TTL)


# States in which RQ still owns a job: it will run it, or is running it, or will retry it.
LIVE_STATES = {
    JobStatus.QUEUED,
    JobStatus.STARTED,
    JobStatus.SCHEDULED,
    JobStatus.DEFERRED,
}


def without_live_job(connection: redis.Redis, set_ids: Sequence[str]) -> list[str]:
    """The sets that have no job RQ will still run (none at all, or one ended), in one round
    trip."""
    pipe = connection.pipeline()
    for set_id in set_ids:
        pipe.hget(Job.key_for(set_id), "status")
    live = {state.value for state in LIVE_STATES}
    return [
        set_id
        for set_id, status in zip(set_ids, pipe.execute(), strict=True)
        if status is None or status.decode() not in live
    ]


def enqueue_game_sets(queue: Queue, set_ids: Iterable[str], *, replace_ended: bool = False) -> int:
    """Enqueue the sets that have no job yet, in one round trip; returns how many. With
    `replace_ended`, a set whose job has ended (failed, say) gets a new one; a live job (queued,
    or started by a worker) is left alone."""
    with enqueue_lock(queue):
        ids = list(set_ids)
        if replace_ended:
            for set_id in ids:
                job = fetch_job(queue.connection, set_id)
                if job is not None and job.get_status() not in LIVE_STATES:
                    delete_job(job)
        pipe = queue.connection.pipeline()
        for set_id in ids:
            pipe.exists(Job.key_for(set_id))
        data = [
            Queue.prepare_data(RUN_GAME_SET, timeout=GAME_SET_TIMEOUT, **_job_options(set_id))
            for set_id, exists in zip(ids, pipe.execute(), strict=True)
            if not exists
        ]
        return len(queue.enqueue_many(data)) if data else 0
