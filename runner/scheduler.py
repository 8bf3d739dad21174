"""The nightly schedule: RQ's cron scheduler, in UTC, with exactly one instance running.

RQ's CronScheduler lets any number run side by side (each registers itself), so a Redis
lock with a TTL decides: the scheduler that holds it renews it on every heartbeat, and a
second one refuses to start while it is held. A scheduler killed without a goodbye frees
the lock LOCK_TTL seconds later.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from croniter import CroniterError, croniter
from rq.cron import CronJob, CronScheduler
from rq.job import Job

from arena.config import ConfigError, env
from arena.errors import ArenaError
from runner.queue import NIGHTLY as NIGHTLY_JOB
from runner.queue import arena_queue

log = logging.getLogger("arena.scheduler")

LOCK_KEY = "arena:scheduler:lock"
LOCK_TTL = 30
# The longest the scheduler sleeps between heartbeats (RQ's own cap is 60 s, above the TTL).
HEARTBEAT_EVERY = 5.0
NIGHTLY_TIMEOUT = 300
_RECONNECT_MAX_WAIT = 10.0


# The night last enqueued ("YYYYmmdd-HHMM"), by whichever scheduler: a scheduler starting
# after one that died catches up a night due meanwhile.
LAST_NIGHT_KEY = "arena:scheduler:last-night"

# 1: renewed; 2: taken back, as it had vanished (Redis restarted empty); 0: another holds it.
_RENEW = """
local current = redis.call('get', KEYS[1])
if current == ARGV[1] or not current then
  redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2])
  if current then return 1 end
  return 2
end
return 0
"""


class SchedulerRunning(ArenaError):
    """Another scheduler holds the lock: only one may run."""


class SchedulerLockLost(ArenaError):
    """The lock this scheduler held went to another one (e.g. after a long Redis outage)."""


def check_cron(expression: str, name: str = "ARENA_NIGHTLY_CRON") -> str:
    """The expression if it has five fields and fires at all ('0 0 31 4 *' never does);
    `name` is where it came from, for the message."""
    fields = expression.split()
    problem = "is not a cron expression"
    if len(fields) == 5 and croniter.is_valid(expression):
        try:
            croniter(expression, datetime.now(UTC)).get_next(datetime)
            return expression
        except (CroniterError, ValueError):
            problem = "never fires"
    elif len(fields) != 5:
        problem = f"has {len(fields)} field{'s' * (len(fields) != 1)}, not 5"
    elif bad := _bad_field(fields):
        problem = bad
    raise ConfigError(
        f"{name}={expression!r} {problem} "
        "(five fields: minute hour day month weekday, e.g. '0 2 * * *')"
    )


_CRON_FIELDS = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day", "1-31"),
    ("month", "1-12 or jan-dec"),
    ("weekday", "0-6 or sun-sat"),
)


def _bad_field(fields: list[str]) -> str | None:
    """Which field of five makes the expression invalid, tried alone among '*'s (croniter's
    own message names none)."""
    for at, (what, values) in enumerate(_CRON_FIELDS):
        alone = " ".join(field if i == at else "*" for i, field in enumerate(fields))
        if not croniter.is_valid(alone):
            return f"has {fields[at]!r} as its {what}, which takes {values}"
    return None


class UtcCronJob(CronJob):
    """A cron job whose expression is read in UTC (RQ reads it in local time) and whose jobs
    use the arena queue's JSON serializer (RQ's cron enqueues with its default pickle one)."""

    last_enqueued: datetime | None = None  # when the last night this one enqueued was due

    def get_next_enqueue_time(self) -> datetime:
        if not self.cron:
            return super().get_next_enqueue_time()
        base = self.latest_enqueue_time or datetime.now(UTC)
        return _utc(croniter(self.cron, base.astimezone(UTC)).get_next(datetime))

    def enqueue(self, connection: redis.Redis) -> Job:
        due = self.next_enqueue_time or datetime.now(UTC)
        if self.cron:
            # A scheduler paused past more than one of its times (the host asleep, Redis away)
            # still waits for the first: its job would be skipped as overdue, in favour of a
            # later night no one enqueues. The latest night due is the one to play.
            due = max(due, self.last_due())
        return self.enqueue_night(connection, due)

    def enqueue_night(self, connection: redis.Redis, due: datetime) -> Job:
        """The job of the night due at `due`: named by it (one tournament per night), and
        given the cron expression, so that a night found overdue is left to the latest."""
        queue = arena_queue(connection, self.queue_name)
        night = night_of(due)
        kwargs = {**self.kwargs, "night": night, "cron": self.cron}
        # At the front: the night's job only creates its tournament (whose sets queue behind
        # the rest), and waiting behind a big backlog it could find the next night overdue.
        options = {**self.job_options, "at_front": True}
        job = queue.enqueue(self.func_name, args=self.args, kwargs=kwargs, **options)
        connection.set(LAST_NIGHT_KEY, night)
        self.last_enqueued = due
        log.info("enqueued %s of %s (job %s) on %s", self.name, night, job.id, self.queue_name)
        return job

    def last_due(self, now: datetime | None = None) -> datetime:
        """The latest time the job was due, up to `now`."""
        now = (now or datetime.now(UTC)).astimezone(UTC)
        # get_prev is strictly before its start: a hair later counts a time due this instant
        # (a whole second later, at 01:59:59.5, named 02:00 due before it was).
        return _utc(croniter(self.cron, now + timedelta(microseconds=1)).get_prev(datetime))


def _utc(when: datetime) -> datetime:
    """croniter's answer in UTC: naive when its start was (the expressions are read in UTC)."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def night_of(due: datetime) -> str:
    """A night's name: the time it was due, in UTC ("20261201-0200")."""
    return f"{due.astimezone(UTC):%Y%m%d-%H%M}"


def overdue(night: str, cron: str, now: datetime | None = None) -> str | None:
    """The name of a later night already due when `night`'s job runs, if there is one."""
    due = datetime.strptime(night, "%Y%m%d-%H%M").replace(tzinfo=UTC)
    later = _utc(croniter(cron, due).get_next(datetime))
    return night_of(later) if later <= (now or datetime.now(UTC)) else None


def holder(connection: redis.Redis) -> str | None:
    """Who holds the scheduler lock ("host:pid:…"), if anyone."""
    return _text(connection.get(LOCK_KEY))


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


class ArenaScheduler(CronScheduler):
    """RQ's CronScheduler plus the single-instance lock, renewed on every heartbeat."""

    def __init__(self, connection: redis.Redis, **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.nightly: UtcCronJob | None = None

    def acquire(self) -> None:
        if not self.connection.set(LOCK_KEY, self.token, nx=True, ex=LOCK_TTL):
            other = holder(self.connection) or "another process"
            left = max(int(self.connection.ttl(LOCK_KEY)), 1)
            raise SchedulerRunning(
                f"a scheduler holds the lock ({other}); only one may run at a time. If it was "
                f"killed, its lock expires in {left} s: start this one again then (a night "
                "due meanwhile is caught up)."
            )

    def release(self) -> None:
        # Delete only our own lock: compare and delete in one step.
        script = "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end"
        with contextlib.suppress(redis.RedisError):
            self.connection.eval(script, 1, LOCK_KEY, self.token)

    def heartbeat(self) -> None:
        super().heartbeat()
        # Renew if ours, take it if it vanished (Redis restarted empty), else report the holder.
        held = self.connection.eval(_RENEW, 1, LOCK_KEY, self.token, LOCK_TTL)
        if held == 0:
            raise SchedulerLockLost(
                f"another scheduler ({holder(self.connection)}) took the lock; stopping"
            )
        due = self.nightly.last_enqueued if self.nightly is not None else None
        if held == 2 and self.nightly is not None and due is not None:
            # The queue went with Redis: the last night's job, if no worker had run it yet,
            # is lost. Enqueued again, it runs or finds its tournament made already. (A lock
            # that merely expired while this process was paused looks the same from here.)
            log.warning(
                "the scheduler's lock was gone (Redis came back empty, or this scheduler was "
                "paused for over %d s): enqueuing the night of %s again",
                LOCK_TTL,
                night_of(due),
            )
            self.nightly.enqueue_night(self.connection, due)

    def catch_up(self) -> None:
        """At start: enqueue the latest night due if no scheduler enqueued it (one died, or
        none ran at the time). Not on a first start (no night enqueued on this Redis yet)."""
        assert self.nightly is not None
        last = _text(self.connection.get(LAST_NIGHT_KEY))
        due = self.nightly.last_due()
        if last is not None and last < night_of(due):
            log.warning(
                "catching up the night of %s: no scheduler enqueued it (the last one enqueued: %s)",
                night_of(due),
                last,
            )
            self.nightly.enqueue_night(self.connection, due)

    def calculate_sleep_interval(self) -> float:
        return float(min(super().calculate_sleep_interval(), HEARTBEAT_EVERY))

    def add_nightly(self, queue_name: str, cron: str, kwargs: dict[str, Any]) -> CronJob:
        job = UtcCronJob(
            queue_name=queue_name,
            func_name=NIGHTLY_JOB,
            kwargs=kwargs,
            cron=check_cron(cron),
            job_timeout=NIGHTLY_TIMEOUT,
            name="nightly-round-robin",
        )
        self._cron_jobs.append(job)
        self.nightly = job
        log.info("nightly round robin at %r (UTC), next %s", cron, job.next_enqueue_time)
        return job

    def run_once(self) -> None:
        """One loop step of RQ's start(): enqueue what is due, heartbeat."""
        if self.enqueue_jobs():
            self.save()
        self.heartbeat()


def run_scheduler(
    queue_name: str, *, cron: str | None = None, kwargs: dict[str, Any] | None = None
) -> int:
    """Run the one scheduler until SIGTERM/SIGINT; refuses to start while another runs."""
    import signal

    from runner import redis_conn

    cron = check_cron(cron, "--cron") if cron else check_cron(env("ARENA_NIGHTLY_CRON"))
    connection = redis_conn.connect()
    scheduler = ArenaScheduler(connection)
    scheduler.acquire()
    job = scheduler.add_nightly(queue_name, cron, kwargs or {})
    scheduler.catch_up()
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"scheduler {scheduler.token}: nightly round robin at '{cron}' UTC on queue "
        f"{queue_name}; next at {job.next_enqueue_time:%Y-%m-%d %H:%M} UTC",
        flush=True,
    )
    scheduler.register_birth()
    wait = 1.0
    try:
        while not stopping:
            try:
                scheduler.run_once()
                wait = 1.0
                _sleep(scheduler.calculate_sleep_interval(), lambda: stopping)
            except redis_conn.REDIS_DOWN as exc:
                log.warning(
                    "lost Redis at %s (%s); retrying in %.0f s", redis_conn.describe(), exc, wait
                )
                _sleep(wait, lambda: stopping)
                wait = min(wait * 2, _RECONNECT_MAX_WAIT)
                scheduler.connection = _reconnect(scheduler.connection)
    finally:
        with contextlib.suppress(redis.RedisError):
            scheduler.register_death()
        scheduler.release()
    return 0


def _reconnect(connection: redis.Redis) -> redis.Redis:
    """A client for where Redis is now. A Redis by URL comes back at the same address, but a
    restarted embedded server listens on a new socket: find it, or start it."""
    from runner import redis_conn

    if redis_conn.redis_url():
        return connection
    try:
        fresh = redis_conn.connect()
    except redis_conn.RedisUnavailable:
        return connection  # tried again after the next wait
    log.warning("reconnected to Redis at %s", redis_conn.describe())
    return fresh


def _sleep(seconds: float, stop: Any) -> None:
    deadline = time.monotonic() + seconds
    while not stop() and time.monotonic() < deadline:
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
