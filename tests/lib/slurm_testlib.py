"""A one-node Slurm cluster for a test, from Debian's packages (slurmctld,
slurmd, slurm-client, munge), configured and run in a temporary directory.

  with SlurmCluster(tmpdir) as c:      # munged, slurmctld, slurmd started
      subprocess.run(["srun", "-n", "2", ...], env=c.env)
                                       # stopped on leaving, also on SIGTERM

Nothing outside the directory is used: a fresh munge key, munged's socket,
slurm.conf (SLURM_CONF in c.env), state and spool, logs; the two Slurm
ports are picked free on 127.0.0.1 so tests on one machine do not meet.
The daemons run in the foreground (-F / -D) as children of the test, in
its process group: tests/run.sh's timeout reaches them too.  Accounting
storage and the energy plugin are off (accounting_storage/none,
acct_gather_energy/none): what most test machines and many clusters have.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "sinfo", "scontrol")


def missing_programs():
    return [p for p in DAEMONS if not shutil.which(p) and not os.path.exists("/usr/sbin/" + p)]


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _which(p):
    return shutil.which(p) or "/usr/sbin/" + p


class SlurmCluster:
    def __init__(self, root):
        self.root = root
        # munged's socket path must fit a sockaddr_un (108 bytes).
        self.mdir = os.path.join(root, "munge")
        if len(self.mdir) > 80:
            import tempfile
            self.mdir = tempfile.mkdtemp(prefix="anchor-munge-")
        self.conf = os.path.join(root, "slurm.conf")
        self.host = socket.gethostname().split(".")[0]
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def _conf(self):
        user = __import__("pwd").getpwuid(os.getuid()).pw_name
        cpus = os.cpu_count() or 1
        d = self.root
        return "\n".join([
            "ClusterName=anchortest",
            "SlurmctldHost=%s(127.0.0.1)" % self.host,
            "SlurmctldPort=%d" % _free_port(),
            "SlurmdPort=%d" % _free_port(),
            "SlurmUser=%s" % user,
            "SlurmdUser=%s" % user,
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s/sock" % self.mdir,
            "StateSaveLocation=%s/state" % d,
            "SlurmdSpoolDir=%s/spool" % d,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd.pid" % d,
            "SlurmctldLogFile=%s/log/slurmctld.log" % d,
            "SlurmdLogFile=%s/log/slurmd.log" % d,
            # No cgroups in a container: track processes by their parents.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin",
            "ReturnToService=2",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "AcctGatherEnergyType=acct_gather_energy/none",
            "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d RealMemory=1000 State=UNKNOWN" % (self.host, cpus),
            # Two tasks on a 2-core machine even while other jobs run:
            # cores may be shared.
            "PartitionName=debug Nodes=%s Default=YES MaxTime=30 State=UP OverSubscribe=FORCE:4" % self.host,
            "",
        ])

    def _log_tails(self):
        out = []
        for name in ("log/slurmctld.log", "log/slurmd.log", "munged.log"):
            path = os.path.join(self.root if name.startswith("log/") else self.mdir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    out.append("--- %s\n%s" % (path, "".join(f.readlines()[-15:])))
        return "\n".join(out)

    def start(self, timeout_s=60):
        for sub in ("state", "spool", "log"):
            os.makedirs(os.path.join(self.root, sub), exist_ok=True)
        os.makedirs(self.mdir, exist_ok=True)
        os.chmod(self.mdir, 0o700)
        key = os.path.join(self.mdir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        with open(self.conf, "w") as f:
            f.write(self._conf())
        signal.signal(signal.SIGTERM, self._on_term)
        self.procs.append(subprocess.Popen(
            [_which("munged"), "-F", "-f", "--key-file=" + key, "--socket=%s/sock" % self.mdir,
             "--pid-file=%s/munged.pid" % self.mdir, "--log-file=%s/munged.log" % self.mdir,
             "--seed-file=%s/seed" % self.mdir], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        self._wait(lambda: os.path.exists(os.path.join(self.mdir, "sock")), 10, "munged's socket")
        self.procs.append(subprocess.Popen([_which("slurmctld"), "-D", "-i", "-f", self.conf], env=self.env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        self.procs.append(subprocess.Popen([_which("slurmd"), "-D", "-f", self.conf], env=self.env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        self._wait(self._idle, timeout_s, "node %s idle in sinfo" % self.host)
        return self

    def _idle(self):
        p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env)
        return p.returncode == 0 and p.stdout.strip() in ("idle", "mixed", "allocated")

    def _wait(self, cond, timeout_s, what):
        t0 = time.time()
        while time.time() - t0 < timeout_s:
            for p in self.procs:
                if p.poll() is not None:
                    self.stop()
                    raise RuntimeError("%s exited (%d) while waiting for %s\n%s" %
                                       (p.args[0], p.returncode, what, self._log_tails()))
            if cond():
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("no %s after %d s\n%s" % (what, timeout_s, self._log_tails()))

    def slurmd_pid(self):
        return self.procs[2].pid

    def stop(self):
        # slurmd first (it ends the job steps it started), then the
        # controller, then munge that both talk to.
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []
        if self.mdir != os.path.join(self.root, "munge"):
            shutil.rmtree(self.mdir, ignore_errors=True)

    def _on_term(self, signum, frame):
        self.stop()
        sys.exit(128 + signum)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
