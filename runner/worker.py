"""Arena workers: RQ workers tuned to notice a dead worker within a minute, and their supervisor.

`arena worker --count N` runs a supervisor that starts N worker processes, restarts any that
die, and reconciles the queue with the database at start and every RECONCILE_INTERVAL
seconds. Each worker process reconnects after losing Redis instead of exiting.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import subprocess
import sys
import time
from types import FrameType
from typing import Any

import redis
from rq import Queue, SimpleWorker, worker_registration
from rq.exceptions import StopRequested
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.worker import WorkerStatus
from sqlalchemy.exc import OperationalError

from arena.errors import ArenaError
from arena.storage.database import driver_reason
from arena.storage.errors import SchemaTooNew
from runner.periodic import every
from runner.pids import die_with_parent, keep_private
from runner.queue import JOB_FUNCTIONS
from runner.queue import queue_name as default_queue_name
from runner.redis_conn import REDIS_DOWN

log = logging.getLogger("arena.worker")

# RQ's defaults (a 420 s worker TTL, heartbeats good for 30 + 60 s, registry clean-up every
# 10 minutes) let a dead worker's job sit for up to ten minutes. These bring it under a minute:
# a running job's heartbeat lasts JOB_HEARTBEAT_GRACE seconds beyond the next expected beat.
WORKER_TTL = 35  # idle workers block on the queue for WORKER_TTL - 15 seconds at a time
JOB_MONITORING_INTERVAL = 5
JOB_HEARTBEAT_GRACE = 15
MAINTENANCE_INTERVAL = 15
RECONCILE_INTERVAL = 15
_RECONNECT_MAX_WAIT = 10.0
# Longest pause before starting again a worker that keeps dying.
RESTART_PAUSE_MAX = 60.0
# A worker's exit code when a newer arena has upgraded the database (jobs.outdated): starting
# it again would not help, so the supervisor stops every worker and exits.
EXIT_OUTDATED = 3


class ArenaWorker(SimpleWorker):
    """An RQ worker that plays game sets in its own process, with short heartbeats.

    RQ's default worker forks a work horse per job; here that fork cost more than the job's
    own bookkeeping: every horse reconnected to the database and the game master and compiled
    every SQL statement afresh, 20 ms of CPU per game. A game set needs no more isolation than
    the worker process gives (the bots run in their own processes), so jobs run in the worker
    and a thread keeps the heartbeats going, as the forking worker does while it waits.

    If the worker dies mid-set its job's heartbeat expires (JOB_MONITORING_INTERVAL +
    JOB_HEARTBEAT_GRACE seconds) and the next registry clean-up (MAINTENANCE_INTERVAL) of any
    worker retries it; the fork server, losing its worker, kills its agents at once.
    """

    lost_redis = False  # set when it left RQ's loop because Redis went away (see heartbeat)

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        from runner import jobs

        jobs.stopping.set()  # see there
        super().request_stop(signum, frame)

    def perform_job(self, job: Job, queue: Queue, execution: Any) -> bool:
        foreign = _foreign(job)
        if foreign is None:
            return bool(super().perform_job(job, queue, execution))
        # Anything that reaches Redis can queue a job, a process bot among them, and RQ would
        # import and call whatever function it names (os.system, say) in this worker. Refused
        # without running it, or any callback it names.
        why = (
            f"job {job.id} calls {foreign}, which is not an arena job; refused without "
            "running it (whoever can reach this Redis queued it: see docs/running.md, Security)"
        )
        self.log.error("Worker %s: %s", self.name, why)
        job.retries_left = 0
        job._status = JobStatus.FAILED
        self.handle_job_failure(
            job=job,
            queue=queue,
            exc_string=why,
            started_job_registry=queue.started_job_registry,
            execution=execution,
        )
        return False

    def execute_job(self, job: Job, queue: Queue) -> None:
        execution = self.prepare_execution(job)
        beat = functools.partial(self.maintain_heartbeats, job, execution)
        with every(self.job_monitoring_interval, beat, "heartbeat"):
            try:
                self.perform_job(job, queue, execution)
            except REDIS_DOWN as exc:
                self._lost_redis_ending(job, exc)
        self.set_state(WorkerStatus.IDLE)

    def _lost_redis_ending(self, job: Job, exc: Exception) -> None:
        """Redis went away while RQ stored the job's end (what the job did is in the database;
        a lost job is queued again from there). RQ's loop would quit with a page of chained
        tracebacks: say it in a line, leave the loop, and reconnect (work_forever)."""
        from runner.jobs import RatingsDeferred

        ended = _job_error(exc)
        if isinstance(ended, RatingsDeferred):  # its set is recorded: only rating waits
            how = ": its set is recorded; the next rating pass, once Redis is back, rates it"
        else:
            how = f", which failed: {ended}" if ended else ""
        self.log.warning("Worker %s: lost Redis ending job %s%s (%s)", self.name, job.id, how, exc)
        self.lost_redis = True
        raise StopRequested() from None

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        # RQ adds a fixed 60 s; a shorter grace means a dead worker's job expires sooner.
        interval: float = self.job_monitoring_interval
        if job.timeout and job.timeout > 0:
            interval = min(job.timeout - working_time, interval)
        return int(interval) + JOB_HEARTBEAT_GRACE

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        try:
            super().heartbeat(timeout, pipeline)
            self._still_registered(pipeline)
        except REDIS_DOWN:
            if pipeline is not None or self.get_state() == WorkerStatus.BUSY:
                raise
            # Idle, and Redis is gone. RQ would retry this same client forever, but an
            # embedded Redis started again listens on a new socket: leave RQ's loop quietly
            # and let work_forever connect afresh.
            self.lost_redis = True
            raise StopRequested() from None

    def _still_registered(self, pipeline: Any) -> None:
        """Keep this worker in RQ's list of workers (`rq info`, Worker.all) at each heartbeat.
        RQ registers a worker only as it starts: after a Redis restart (this one keeping
        nothing) a worker busy at the time went on unlisted, its heartbeats keeping a key of
        one field alive. Writing the same fields again costs nothing in the same round trip."""
        if self.birth_date is None:  # not registered yet at all
            return
        connection = pipeline if pipeline is not None else self.connection
        connection.hset(self.key, mapping={**self.serialize(), "state": self.get_state()})
        worker_registration.register(self, pipeline)

    def handle_exception(self, job: Job, *exc_info: Any) -> None:
        error = exc_info[1]
        if isinstance(error, OperationalError):
            # The database went away mid-set (restarted, failed over, its connections ended):
            # the driver's reason is what helps, not a page of traceback with the SQL in it.
            self.log.error(
                "Worker %s: job %s failed: the database did not answer (%s); the set is run "
                "again (RQ's retry, or the reconciler once the database answers), and a set "
                "it had recorded is not recorded twice",
                self.name,
                job.id,
                driver_reason(error),
            )
            return
        if not isinstance(error, ArenaError):
            super().handle_exception(job, *exc_info)  # a bug: the traceback helps
            return
        # The arena's own errors say what happened and what to do; RQ's traceback of one
        # (a game aborted, a game master gone) buried that message in the log. The arena
        # registers no exception handlers of RQ's, so there are none to call here.
        self.log.error("Worker %s: job %s failed: %s", self.name, job.id, error)

    def stop_listening(self) -> None:
        """Stop the thread that listens for commands, once Redis was lost. RQ stops it in its
        teardown, after registering the worker's death, which fails with Redis gone; and Redis
        lost while RQ starts a worker (it subscribes before its loop) skips teardown altogether.
        Left running, the thread retries and subscribes again with its own connection once Redis
        is back: one more at each reconnect."""
        if self.pubsub_thread is not None:
            self.pubsub_thread.stop()  # it closes its connection as it ends

    def maintain_heartbeats(self, job: Job, execution: Any) -> None:
        # Losing Redis for a moment must not abandon a game in progress: the result goes to
        # the database, and the heartbeat resumes once Redis is back.
        try:
            super().maintain_heartbeats(job, execution)
        except REDIS_DOWN as exc:
            self.log.warning("Worker %s: heartbeat failed (%s); the game goes on", self.name, exc)


def _foreign(job: Job) -> str | None:
    """What the job would have this worker call that is not an arena job: its function, or
    any callback (the arena's jobs have none); None for an arena job."""
    if job.func_name not in JOB_FUNCTIONS:
        return job.func_name
    callbacks = (job._success_callback_name, job._failure_callback_name, job._stopped_callback_name)
    return next((f"{name} (as a callback)" for name in callbacks if name), None)


def _job_error(lost: BaseException) -> BaseException | None:
    """The job's own error, when losing Redis interrupted RQ storing it (it is the context
    of the connection errors that followed)."""
    error = lost.__context__
    while isinstance(error, (redis.RedisError, OSError)):
        error = error.__context__
    return error


def make_worker(connection: redis.Redis, queue: str) -> ArenaWorker:
    from runner.queue import arena_queue

    return ArenaWorker(
        [arena_queue(connection, queue)],
        connection=connection,
        serializer=JSONSerializer,
        worker_ttl=WORKER_TTL,
        job_monitoring_interval=JOB_MONITORING_INTERVAL,
        maintenance_interval=MAINTENANCE_INTERVAL,
    )


def work_forever(queue: str, *, burst: bool = False) -> int:
    """Run one RQ worker; after losing Redis, reconnect (with backoff) rather than exit."""
    from runner import jobs, redis_conn

    wait = 1.0
    worker: ArenaWorker | None = None
    while True:
        # A stop asked for during the pause below lands on the last worker (RQ's handlers
        # stay installed): honour it rather than start a new worker that never heard it.
        if worker is not None and _stop_requested(worker):
            return 0
        try:
            connection = redis_conn.connect()
            worker = make_worker(connection, queue)
            if wait > 1.0:
                log.warning("reconnected to Redis at %s", redis_conn.describe())
            wait = 1.0
            worker.work(burst=burst, logging_level="INFO")
            if jobs.outdated:
                return EXIT_OUTDATED
            if worker.lost_redis:
                raise redis_conn.RedisUnavailable("the connection was lost")
            if burst or _stop_requested(worker):
                return 0
            # RQ's loop quits on errors it does not handle (a Redis timeout among them).
            log.warning("worker loop ended without a stop request; starting it again")
        except (*REDIS_DOWN, redis_conn.RedisUnavailable) as exc:
            if worker is not None:
                worker.stop_listening()
                if _stop_requested(worker):
                    return 0
            log.warning(
                "lost Redis at %s (%s); reconnecting in %.0f s", redis_conn.describe(), exc, wait
            )
        try:
            time.sleep(wait)
        except (StopRequested, *REDIS_DOWN):
            # How RQ's handler, still installed, stops a worker at rest; with Redis still gone
            # it fails as it records the stop, having noted it.
            return 0
        wait = min(wait * 2, _RECONNECT_MAX_WAIT)


def _stop_requested(worker: ArenaWorker) -> bool:
    # RQ sets this date on SIGTERM/SIGINT whether the worker was idle or busy.
    return worker._stop_requested or worker._shutdown_requested_date is not None


class Supervisor:
    """Starts and restarts N worker processes and runs the reconciler between checks."""

    def __init__(self, count: int, queue: str, *, reconcile_every: float = RECONCILE_INTERVAL):
        self.count = count
        self.queue = queue
        self.reconcile_every = reconcile_every
        self.children: list[subprocess.Popen[bytes] | None] = [None] * count
        self._stopping = False
        self.outdated = False

    def _spawn(self, index: int) -> subprocess.Popen[bytes]:
        # The child asks to die with this process itself: a preexec_fn would run Python in a
        # fork of this one, whose gRPC threads (the admin token check) gRPC restarts there.
        argv = [sys.executable, "-m", "runner.worker", "--queue", self.queue]
        child = subprocess.Popen([*argv, "--parent", str(os.getpid())])
        log.info("worker %d started (pid %d)", index, child.pid)
        return child

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        if self._stopping:  # a second signal: stop now, abandoning running jobs (RQ retries)
            for child in self.children:
                if child is not None and child.poll() is None:
                    child.kill()
            return
        self._stopping = True
        log.info("stopping: workers finish their current game set (signal again to force)")
        for child in self.children:
            if child is not None and child.poll() is None:
                child.send_signal(signal.SIGTERM)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        reconcile_once(self.queue)
        for index in range(self.count):
            if not self._stopping:  # a signal during the first pass: start nothing
                self.children[index] = self._spawn(index)
        next_reconcile = time.monotonic() + self.reconcile_every
        # A worker that keeps dying (a database that does not answer, say) is started again
        # after a pause that doubles each time it lived less than a minute.
        started = [time.monotonic()] * self.count
        pause = [0.0] * self.count
        next_start = [0.0] * self.count
        while not self._stopping:
            now = time.monotonic()
            for index, child in enumerate(self.children):
                if child is not None:
                    code = child.poll()
                    if code is None:
                        continue
                    if code == EXIT_OUTDATED:
                        log.error(
                            "worker %d stopped: a newer arena has upgraded the database; "
                            "stopping this arena's workers (start the new arena's instead)",
                            index,
                        )
                        self._stop(signal.SIGTERM, None)
                        self.outdated = True
                        break
                    short = now - started[index] < 60
                    pause[index] = min(2 * pause[index] or 1.0, RESTART_PAUSE_MAX) if short else 0
                    log.warning(
                        "worker %d exited (code %s); starting a new one in %.0f s",
                        index,
                        code,
                        pause[index],
                    )
                    self.children[index] = None
                    next_start[index] = now + pause[index]
                if now >= next_start[index] and not self._stopping:
                    self.children[index] = self._spawn(index)
                    started[index] = now
            if time.monotonic() >= next_reconcile:
                reconcile_once(self.queue)
                next_reconcile = time.monotonic() + self.reconcile_every
            time.sleep(0.5)
        for child in self.children:
            if child is not None:
                child.wait()
        return 2 if self.outdated else 0


def reconcile_once(queue: str) -> None:
    """One reconciler pass (sets the database has queued that Redis lost are queued again, sets
    out of attempts given up on, ...); a Redis or database away is logged, not raised."""
    from runner import jobs, redis_conn
    from runner.queue import announce_database
    from runner.reconcile import reconcile

    try:
        connection = redis_conn.connect()
        # Before the pass: commands that queue sets check their database against it.
        announce_database(connection, jobs.database().shown_url, queue)
        reconcile(jobs.database(), connection, queue)
    except (*REDIS_DOWN, redis_conn.RedisUnavailable) as exc:
        log.warning("reconciler: Redis unreachable at %s (%s)", redis_conn.describe(), exc)
    except OperationalError as exc:  # the database went away: the next pass tries again
        log.warning("reconciler: the database did not answer (%s)", driver_reason(exc))
    except ArenaError as exc:
        log.warning("reconciler: %s", exc)
    except Exception:
        log.exception("reconciler pass failed")


def setup_logging() -> None:
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s [{os.getpid()}] %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of one worker process (the supervisor starts these)."""
    keep_private()  # its environment holds the database URL and the admin token
    parser = argparse.ArgumentParser(prog="runner.worker")
    parser.add_argument("--queue", default=default_queue_name())
    parser.add_argument("--burst", action="store_true")
    parser.add_argument("--parent", type=int, help="the supervisor: end when it ends")
    args = parser.parse_args(argv)
    if args.parent is not None:
        die_with_parent(parent=args.parent)
    setup_logging()
    return start(args.queue, burst=args.burst)


def start(queue: str, *, burst: bool = False) -> int:
    """Preload, then work: a database a newer arena has upgraded stops the worker before it
    takes a job off the queue (EXIT_OUTDATED)."""
    try:
        preload()
    except SchemaTooNew as exc:  # a newer arena upgraded the database as this one started
        log.error("%s", exc)
        return EXIT_OUTDATED
    except ArenaError as exc:  # a database that does not answer, say: said in one line
        log.error("%s", exc)
        return 1  # the supervisor starts a worker again, after a pause that grows
    return work_forever(queue, burst=burst)


def preload() -> None:
    """Import and open what jobs use, so the first game set starts as fast as the others."""
    import arena._proto.sixtythree.v1.arena_pb2_grpc  # noqa: F401
    import runner.tournament  # noqa: F401
    from runner import jobs
    from runner.launch import forkserver

    jobs.database()  # opened (and its schema checked) before the first job
    forkserver.shared()  # one warm Python forks all the worker's agents


if __name__ == "__main__":
    sys.exit(main())
