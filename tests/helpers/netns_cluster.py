"""A Ray cluster of several hosts on one Linux machine (tests/test_cluster_netns.py, bench/cluster_many_trials.py).

Each node is a set of Linux namespaces held open by one ``sleep`` process: its own network (an address on a
bridge this harness creates), its own hostname (UTS) and its own mount table, in which a tmpfs is mounted
over ``ROOT/local``: that folder is the node's local disk, which no other node sees (Ray's temp dir and
``LWNAS_CACHE`` live there, as ``/tmp`` and ``~/.cache`` do on a real host). Everything else of the
machine's file system is shared by all nodes, as a cluster's shared file system is: the Python
environment, the study files, the data. The layout, in a ``10.213.X.0/24`` range picked free for each run::

    bridge lwb-<id>  10.213.X.1   this machine's side (the harness reads the storage through it)
    head             10.213.X.10  ray start --head --num-cpus 0: it runs drivers and trains nothing
    w1, w2, ...      10.213.X.11+ ray start --address 10.213.X.10:6379 --num-cpus N
    client           10.213.X.20  no Ray: lwnas status, export and the dashboard's reads
    db               10.213.X.30  PostgreSQL, a database cluster made for the run on the db host's disk

Nothing here is shared with the machine's own services: PostgreSQL is a server of the run's own (the
machine's is never touched), Ray's ports are each node's own (a network namespace has its ports to
itself), and teardown (``close``) kills every process in the run's network namespaces, deletes the
namespaces, the bridge and the run's folder, whatever state the run is in. A run killed before its
teardown is swept by the next run (``sweep_stale``). Needs root, iproute2, util-linux (unshare, nsenter)
and PostgreSQL's server binaries; ``unavailable()`` says which is missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

RAY_PORT = 6379
PG_PORT = 5432
NODE_START_S = 240.0  # `ray start` of one node on a busy 2-core machine (imports, GCS, raylet, agents)
LOCK = Path("/tmp/lwnas-netns.lock")  # serialises picking a free range and naming a run across processes
ROOT_PREFIX = "/tmp/lwnc-"  # short: Ray's unix socket paths (107 characters at most) live under it
NS_PREFIX = "lwnas-"


class ClusterUnavailable(RuntimeError):
    """This machine cannot host the cluster (not root, a tool missing, namespaces refused)."""


class ClusterError(RuntimeError):
    """The cluster did not come up or a command on it failed."""


def _which(tool: str) -> str | None:
    return shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin")


def postgres_bindir() -> Path | None:
    """PostgreSQL's server binaries (Debian keeps them under /usr/lib/postgresql/VERSION/bin)."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "postgres").exists() and (candidate / "initdb").exists():
            return candidate
    postgres = _which("postgres")
    return Path(postgres).parent if postgres and Path(postgres).with_name("initdb").exists() else None


def unavailable() -> str | None:
    """Why this machine cannot host the cluster, or None when it can (a probe namespace is made and removed)."""
    if sys.platform != "linux":
        return f"network namespaces need Linux, this is {sys.platform}"
    if os.geteuid() != 0:
        return f"creating network namespaces needs root (this process runs as uid {os.geteuid()})"
    for tool, package in (("ip", "iproute2"), ("unshare", "util-linux"), ("nsenter", "util-linux")):
        if not _which(tool):
            return f"`{tool}` is not installed (Debian package {package})"
    if postgres_bindir() is None:
        return "PostgreSQL's server binaries (postgres, initdb) are not installed (Debian package postgresql)"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "there is no `postgres` user to run a PostgreSQL server as"
    probe = f"{NS_PREFIX}probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip() or made.returncode}"
    try:
        inside = subprocess.run(
            ["ip", "netns", "exec", probe, "unshare", "--mount", "--uts", "--propagation", "private", "true"],
            capture_output=True,
            text=True,
        )
        if inside.returncode != 0:
            return f"mount and UTS namespaces are refused: {inside.stderr.strip() or inside.returncode}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise ClusterError(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
    return done


def _netns_pids(netns: str) -> list[int]:
    done = _ip("netns", "pids", netns, check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()] if done.returncode == 0 else []


def _kill_netns(netns: str, timeout: float = 30.0, keep: frozenset[int] = frozenset()) -> list[int]:
    """SIGKILL every process in network namespace ``netns`` (but ``keep``) until none is left; returns them."""
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in _netns_pids(netns) if p not in keep and p != os.getpid()]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        time.sleep(0.2)
    return sorted(set(killed))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Remove what earlier runs left when they were killed before their teardown; returns their ids.

    A run is stale when the process that made it (``ROOT/owner``) no longer exists.
    """
    stale = []
    for root in Path("/tmp").glob(ROOT_PREFIX.rsplit("/", 1)[1] + "*"):
        try:
            owner = int((root / "owner").read_text())
        except (OSError, ValueError):
            continue
        if _pid_alive(owner):
            continue
        run_id = root.name.rsplit("-", 1)[1]
        for netns in _ip("netns", "list", check=False).stdout.split("\n"):
            name = netns.split(" ")[0]
            if name.startswith(f"{NS_PREFIX}{run_id}-"):
                _kill_netns(name)
                _ip("netns", "del", name, check=False)
        _ip("link", "del", f"lwb-{run_id}", check=False)
        shutil.rmtree(root, ignore_errors=True)
        stale.append(run_id)
    return stale


def _used_subnets() -> set[int]:
    """Third octets of the 10.213.X.0/24 ranges any interface of this machine already uses."""
    out = _ip("-o", "-4", "addr", "show", check=False).stdout
    return {int(m.group(1)) for m in re.finditer(r"inet 10\.213\.(\d+)\.", out)}


def ray_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process on a node: this interpreter's tools first, none of the caller's RAY_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "LWNAS_STORAGE"}
    env.update(
        {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            "RAY_USAGE_STATS_ENABLED": "0",
            # token auth is on for `ray start --head` when ~/.ray/auth_token exists, but not for a node or driver
            # given --address; the cluster runs without it on every process
            "RAY_AUTH_MODE": "disabled",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


@dataclass
class Node:
    """One host of the cluster: its namespaces (held by ``holder``), address and hostname."""

    name: str
    ip: str
    netns: str
    hostname: str
    veth: str  # this machine's end of the node's link (``link(name, up=False)`` pulls it)
    holder: subprocess.Popen | None = None
    ray: subprocess.Popen | None = None  # `ray start --block`, when the node runs Ray
    ray_log: Path | None = None


@dataclass
class NetnsCluster:
    """A head, ``workers`` worker nodes, a client host and a PostgreSQL host; ``start()`` brings them up.

    Args:
        workers: worker nodes (``w1``, ``w2``, ...), each ``ray start`` with ``worker_cpus`` CPUs.
        worker_cpus: CPUs each worker node declares to Ray (the head declares none: trials go to workers).
        pythonpath: folders on every node's PYTHONPATH (a task plugin must be importable on every node).
        object_store_mb: Ray's object store per node (lwnas moves almost nothing through it).
    """

    workers: int = 2
    worker_cpus: float = 1
    pythonpath: tuple[str, ...] = ()
    object_store_mb: int = 100
    run_id: str = ""
    root: Path = Path()
    subnet: int = 0
    nodes: dict[str, Node] = field(default_factory=dict)
    postgres: subprocess.Popen | None = None
    _bridge_up: bool = False

    # ---- names and paths ------------------------------------------------------------------------
    @property
    def bridge(self) -> str:
        return f"lwb-{self.run_id}"

    @property
    def local(self) -> Path:
        """The node-local folder: the same path on every node, a different tmpfs behind it on each."""
        return self.root / "local"

    @property
    def shared(self) -> Path:
        """A folder every node sees (the machine's own file system)."""
        return self.root / "shared"

    @property
    def head_address(self) -> str:
        return f"{self.nodes['head'].ip}:{RAY_PORT}"

    @property
    def storage_url(self) -> str:
        return f"postgresql://postgres@{self.nodes['db'].ip}:{PG_PORT}/lwnas"

    @property
    def worker_names(self) -> list[str]:
        return [f"w{i + 1}" for i in range(self.workers)]

    def node_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """Environment of a process on a node: node-local cache, the cluster's PYTHONPATH."""
        paths = [*self.pythonpath, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        return ray_env(
            {"LWNAS_CACHE": str(self.local / "cache"), "PYTHONPATH": os.pathsep.join(paths), **(extra or {})}
        )

    # ---- bringing it up -------------------------------------------------------------------------
    def start(self) -> NetnsCluster:
        """Network, hosts, PostgreSQL, the Ray head and the workers; raises ClusterError (after tearing down)."""
        reason = unavailable()
        if reason:
            raise ClusterUnavailable(reason)
        try:
            self._network()
            self._postgres()
            self._ray_head()
            for name in self.worker_names:
                self.start_ray_worker(name)
            for name in self.worker_names:
                self.wait_ray(name)
        except BaseException:
            self.close()
            raise
        return self

    def _network(self) -> None:
        """The bridge and one veth link per host, in a range and under names no other run uses."""
        sweep_stale()
        LOCK.touch(exist_ok=True)
        with open(LOCK) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # picking a range and creating the bridge is one step for all runs
            while True:
                self.run_id = secrets.token_hex(3)[:5]
                if not Path(f"{ROOT_PREFIX}{self.run_id}").exists():
                    break
            used = _used_subnets()
            free = [x for x in range(1, 255) if x not in used]
            if not free:
                raise ClusterError("every 10.213.X.0/24 range is in use on this machine")
            self.subnet = free[secrets.randbelow(len(free))]
            self.root = Path(f"{ROOT_PREFIX}{self.run_id}")
            self.root.mkdir(mode=0o755)
            os.chmod(self.root, 0o755)  # the postgres user reaches its files under it
            (self.root / "owner").write_text(str(os.getpid()))
            _ip("link", "add", self.bridge, "type", "bridge")
            self._bridge_up = True
            _ip("addr", "add", f"{self._addr(1)}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
        self.local.mkdir()
        self.shared.mkdir()
        hosts = {"head": 10, **{w: 11 + i for i, w in enumerate(self.worker_names)}, "client": 20, "db": 30}
        for name, last in hosts.items():
            self._host(name, self._addr(last))
        lines = ["127.0.0.1 localhost"] + [f"{n.ip} {n.hostname}" for n in self.nodes.values()]
        for node in self.nodes.values():  # each host resolves every hostname of the cluster, as DNS would
            (self.root / f"hosts-{node.name}").write_text("\n".join(lines + [f"127.0.1.1 {node.hostname}"]) + "\n")
        for node in self.nodes.values():
            self._hold(node)

    def _addr(self, last: int) -> str:
        return str(ipaddress.IPv4Address(f"10.213.{self.subnet}.{last}"))

    def _host(self, name: str, ip: str) -> None:
        netns, veth = f"{NS_PREFIX}{self.run_id}-{name}", f"lw{self.run_id}-{name}"[:15]
        node = Node(name, ip, netns, f"lwnas-{self.run_id}-{name}", veth)
        self.nodes[name] = node
        _ip("netns", "add", netns)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
        _ip("link", "set", veth, "master", self.bridge, "up")
        _ip("-n", netns, "addr", "add", f"{ip}/24", "dev", "eth0")
        _ip("-n", netns, "link", "set", "eth0", "up")
        _ip("-n", netns, "link", "set", "lo", "up")

    def _hold(self, node: Node) -> None:
        """Start the process that holds the node's mount and UTS namespaces: its hostname, local disk, hosts file."""
        ready = self.root / f"ready-{node.name}"
        script = (
            f"hostname {node.hostname} && mount -t tmpfs -o size=2g,mode=0755 lwnas-local {self.local} && "
            f"mount --bind {self.root / f'hosts-{node.name}'} /etc/hosts && touch {ready} && exec sleep infinity"
        )
        node.holder = subprocess.Popen(
            ["ip", "netns", "exec", node.netns, "unshare", "--mount", "--uts", "--propagation", "private"]
            + ["sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / f"holder-{node.name}.log", "wb"),  # noqa: SIM115 - the child keeps it
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while not ready.exists():
            if node.holder.poll() is not None or time.monotonic() > deadline:
                log = (self.root / f"holder-{node.name}.log").read_text(errors="replace")
                raise ClusterError(f"host {node.name} did not come up: {log.strip() or node.holder.returncode}")
            time.sleep(0.05)

    # ---- running things on a node -----------------------------------------------------------------
    def command(self, node: str, cmd: list[str], cwd: Path | None = None) -> list[str]:
        """``cmd`` as it runs on ``node`` (in its namespaces, in ``cwd``)."""
        holder = self.nodes[node].holder
        assert holder is not None
        return [
            "nsenter",
            f"--target={holder.pid}",
            "--net",
            "--mount",
            "--uts",
            f"--wd={cwd or self.shared}",
            "--",
            *cmd,
        ]

    def popen(
        self, node: str, cmd: list[str], log: Path, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        """Start ``cmd`` on ``node`` in a session of its own, its output (both streams) to ``log``."""
        with open(log, "ab") as out:
            return subprocess.Popen(
                self.command(node, cmd, cwd),
                env=self.node_env(env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def run(
        self,
        node: str,
        cmd: list[str],
        log: Path,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 600,
    ) -> tuple[int, str]:
        """Run ``cmd`` on ``node`` to its end: (exit code, its output). Raises ClusterError on timeout."""
        start = log.stat().st_size if log.exists() else 0
        return self.finish(self.popen(node, cmd, log, cwd, env), log, timeout, start)

    def finish(self, proc: subprocess.Popen, log: Path, timeout: float = 600, start: int = 0) -> tuple[int, str]:
        """Wait for ``proc`` (from ``popen``) to end: (exit code, what it wrote to ``log`` from byte ``start``)."""
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise ClusterError(f"{proc.args!r} did not end in {timeout:.0f} s:\n{tail(log)}") from None
        with open(log, "rb") as f:
            f.seek(start)
            return rc, f.read().decode(errors="replace")

    def pids(self, node: str) -> list[int]:
        """Every process on host ``node`` (in its network namespace)."""
        return _netns_pids(self.nodes[node].netns)

    def link(self, node: str, up: bool) -> None:
        """Pull (or put back) the cable of ``node``: its link to the bridge goes down (up); nothing reaches it."""
        _ip("link", "set", self.nodes[node].veth, "up" if up else "down")

    # ---- PostgreSQL on the db host ----------------------------------------------------------------
    def _postgres(self) -> None:
        bindir = postgres_bindir()
        assert bindir is not None
        data, sockets, log = self.local / "pg", self.local / "pgsock", self.root / "postgres.log"
        as_postgres = ["runuser", "-u", "postgres", "--"]
        rc, out = self.run(
            "db",
            ["sh", "-c", f"mkdir -p {data} {sockets} && chown postgres {data} {sockets}"],
            self.root / "db-setup.log",
        )
        if rc:
            raise ClusterError(f"cannot prepare PostgreSQL's folders on the db host: {out}")
        rc, out = self.run(
            "db",
            [*as_postgres, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
            self.root / "db-setup.log",
            cwd=Path("/"),
            timeout=180,
        )
        if rc:
            raise ClusterError(f"initdb failed on the db host:\n{out[-2000:]}")
        rc, out = self.run(  # initdb trusts local connections only: the cluster's hosts connect over the bridge
            "db",
            ["sh", "-c", f"echo 'host all all 10.213.{self.subnet}.0/24 trust' >> {data / 'pg_hba.conf'}"],
            self.root / "db-setup.log",
        )
        if rc:
            raise ClusterError(f"cannot open PostgreSQL to the cluster's hosts: {out}")
        settings = ["-c", "fsync=off", "-c", "max_connections=60", "-c", "shared_buffers=16MB"]
        self.postgres = self.popen(
            "db",
            [*as_postgres, str(bindir / "postgres"), "-D", str(data), "-k", str(sockets), "-p", str(PG_PORT)]
            + ["-h", self.nodes["db"].ip, *settings],
            log,
            cwd=Path("/"),
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                self.sql("postgres", "CREATE DATABASE lwnas", autocommit=True)
                return
            except ClusterError as exc:
                if self.postgres.poll() is not None or time.monotonic() > deadline:
                    raise ClusterError(f"PostgreSQL did not start on the db host ({exc}):\n{tail(log)}") from None
                time.sleep(0.5)

    def sql(self, database: str, query: str, autocommit: bool = False) -> list[tuple]:
        """Run ``query`` on the run's PostgreSQL from this machine (through the bridge); its rows."""
        import psycopg

        try:
            with psycopg.connect(
                f"postgresql://postgres@{self.nodes['db'].ip}:{PG_PORT}/{database}",
                connect_timeout=5,
                autocommit=autocommit,
            ) as con:
                cur = con.execute(query)
                return cur.fetchall() if cur.description else []
        except psycopg.Error as exc:
            raise ClusterError(str(exc).strip()) from None

    # ---- Ray ----------------------------------------------------------------------------------------
    def _ray_args(self) -> list[str]:
        return [
            f"--temp-dir={self.local / 'ray'}",
            f"--object-store-memory={self.object_store_mb * 10**6}",
            "--disable-usage-stats",
            "--block",
        ]

    def _ray_head(self) -> None:
        head = self.nodes["head"]
        head.ray_log = self.root / "ray-head.log"
        head.ray = self.popen(
            "head",
            ["ray", "start", "--head", f"--node-ip-address={head.ip}", f"--port={RAY_PORT}", "--num-cpus=0"]
            + ["--num-gpus=0", "--include-dashboard=false", *self._ray_args()],
            head.ray_log,
        )
        self.wait_ray("head")

    def start_ray_worker(self, name: str) -> None:
        """``ray start`` on worker ``name`` (again, after ``kill_ray``); ``wait_ray`` waits for it."""
        node = self.nodes[name]
        node.ray_log = self.root / f"ray-{name}.log"
        node.ray = self.popen(
            name,
            ["ray", "start", f"--address={self.head_address}", f"--node-ip-address={node.ip}"]
            + [f"--num-cpus={self.worker_cpus:g}", "--num-gpus=0", *self._ray_args()],
            node.ray_log,
        )

    def wait_ray(self, name: str, timeout: float = NODE_START_S) -> None:
        node = self.nodes[name]
        assert node.ray is not None and node.ray_log is not None
        deadline = time.monotonic() + timeout
        while "Ray runtime started" not in node.ray_log.read_text(errors="replace"):
            if node.ray.poll() is not None or time.monotonic() > deadline:
                raise ClusterError(f"`ray start` on {name} did not come up:\n{tail(node.ray_log)}")
            time.sleep(0.5)

    def ray_nodes(self, expect: int | None = None, timeout: float = 120) -> dict[str, str]:
        """Alive Ray nodes as Ray's GCS lists them, asked from the head: {Ray node id: host name (head, w1...)}.

        With ``expect``, waits until that many are alive.
        """
        script = (
            "import json, sys, time, ray\n"
            "ray.init(address=sys.argv[1], log_to_driver=False, logging_level='ERROR')\n"
            "deadline = time.time() + float(sys.argv[3])\n"
            "while True:\n"
            "    alive = {n['NodeID']: n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']}\n"
            "    if len(alive) >= int(sys.argv[2]) or time.time() > deadline: break\n"
            "    time.sleep(0.5)\n"
            "print('NODES ' + json.dumps(alive))\n"
        )
        rc, out = self.run(
            "head",
            [sys.executable, "-c", script, self.head_address, str(expect or 0), str(timeout)],
            self.root / "ray-nodes.log",
            timeout=timeout + 120,
        )
        found = re.search(r"^NODES (.*)$", out, re.M)
        if rc != 0 or not found:
            raise ClusterError(f"cannot list the Ray nodes:\n{out[-3000:]}")
        by_ip = {n.ip: n.name for n in self.nodes.values()}
        return {node_id: by_ip.get(ip, ip) for node_id, ip in json.loads(found.group(1)).items()}

    def kill_ray(self, name: str) -> list[int]:
        """kill -9 every process of host ``name`` but its namespace holder: Ray's node, its workers, a driver."""
        node = self.nodes[name]
        keep = frozenset({node.holder.pid} if node.holder else ())
        killed = _kill_netns(node.netns, keep=keep)
        if node.ray is not None:
            node.ray.wait(timeout=30)
        return killed

    # ---- teardown -----------------------------------------------------------------------------------
    def close(self) -> None:
        """Kill every process of every host, delete the namespaces, the bridge and the run's folder."""
        for node in self.nodes.values():
            _kill_netns(node.netns)
        for node in self.nodes.values():
            for proc in (node.ray, node.holder):
                if proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=10)
            _ip("netns", "del", node.netns, check=False)
        if self.postgres is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.postgres.wait(timeout=10)
        if self._bridge_up:
            _ip("link", "del", self.bridge, check=False)
            self._bridge_up = False
        if self.root != Path() and self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)
        self.nodes.clear()

    def __enter__(self) -> NetnsCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def netns_cluster(**kwargs) -> Iterator[NetnsCluster]:
    """``with netns_cluster(workers=2) as cluster:`` a started cluster, torn down on the way out."""
    cluster = NetnsCluster(**kwargs)
    try:
        yield cluster.start()
    finally:
        cluster.close()


def tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"
