# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node as the collection's code reads it: the ``Host`` (private).

``Host`` reads files under an optional root prefix, lists directories, runs commands with a timeout, looks up PATH,
reads the process environment and RLIMIT_MEMLOCK; every text comes out valid UTF-8 with undecodable bytes noted.
``module_host(module)`` is a module's Host on its target; ``read_infiniband(host)`` reads the InfiniBand sysfs tree
(for parsers.rdma.build_hcas). The probes (env_probe), the tool adapters that read a host (tools/*.py) and the
perftest run take a Host; this file holds only the reading, so a module that reads a host does not load the probes.
"""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import runner, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError

IB_CLASS = "/sys/class/infiniband"
HCA_FILES = ("node_guid", "sys_image_guid", "fw_ver", "board_id", "hca_type", "node_desc", "node_type",
             "device/device", "device/vendor", "device/subsystem_device", "device/subsystem_vendor")
PORT_FILES = ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid")
NET_FILES = ("dev_port", "dev_id", "operstate")


def module_host(module, **kwargs):
    """The Host of a module on its target: its commands through runner.run (the hard timeout, C locale, decoding),
    ``which`` through the module's PATH search; ``kwargs`` as Host's (``executable``, ``root``)."""
    return Host(run=lambda argv, timeout_s: runner.run(module, argv, timeout_s),
                which=lambda name: module.get_bin_path(name, required=False), **kwargs)


class Host(object):
    """The node as the probes see it. Every method is small so tests can replace it.

    ``root`` prefixes every absolute path (tests point it at a fake tree); ``run(argv,
    timeout_s)`` returns a runner.Run-like object (rc, stdout, stderr) and may raise
    ToolTimeout; ``which(name)`` returns a path or None.

    Every text the probes read (files, directory listings, link targets, command outputs, the
    environment) comes out of here valid UTF-8: each byte that is not is replaced with U+FFFD
    (runner.decode) and noted; ``take_decode_notes()`` hands the notes over to the records
    built from those texts.
    """

    def __init__(self, run=None, which=None, root="", environ=None, memlock=None, executable=None):
        self._run = run
        self._which = which
        self.root = root or ""
        if environ is None:
            environ = os.environb if os.supports_bytes_environ else os.environ
        self._environ = dict((runner.decode(k)[0], v) for k, v in environ.items())
        self._memlock = memlock
        self.executable = executable
        self._notes = {}

    def _text(self, data, source):
        """``data`` (bytes, or str that may hold surrogate escapes) as valid text; notes undecodable bytes."""
        text, count = runner.decode(data)
        self.note(source, count)
        return text

    def note(self, source, count):
        """Record that ``source`` had ``count`` undecodable bytes (replaced with U+FFFD)."""
        if count:
            self._notes[source] = max(count, self._notes.get(source, 0))

    def take_decode_notes(self):
        """'<source> had N undecodable byte(s), replaced with U+FFFD; ...' for what was read since the last call."""
        notes, self._notes = self._notes, {}
        return "; ".join("%s had %d undecodable byte(s), replaced with U+FFFD" % item for item in notes.items())

    def env_names(self):
        """The names of the environment variables, sorted."""
        return sorted(self._environ)

    def getenv(self, name):
        """The value of an environment variable (valid text; undecodable bytes noted), or None."""
        value = self._environ.get(name)
        return None if value is None else self._text(value, "environment variable %s" % name)

    def path(self, path):
        return self.root + path if self.root else path

    def read(self, path):
        """Text of a file, or None when it is absent or unreadable (EINVAL on empty GID slots)."""
        try:
            with open(self.path(path), "rb") as handle:
                return self._text(handle.read(1 << 20), path)
        except (OSError, IOError):
            return None

    def listdir(self, path):
        """Sorted names in a directory, or None when it is absent."""
        try:
            return sorted(self._text(name, "a name in %s" % path) for name in os.listdir(self.path(path)))
        except (OSError, IOError):
            return None

    def exists(self, path):
        return os.path.exists(self.path(path))

    def realname(self, path):
        """Basename of the resolved path (symlink target), or None."""
        real = self.realpath(path)
        return os.path.basename(real) if real else None

    def realpath(self, path):
        """The resolved absolute path (symlinks followed, root prefix removed), or None when absent."""
        full = self.path(path)
        if not os.path.lexists(full):
            return None
        real = os.path.realpath(full)
        if self.root and real.startswith(os.path.realpath(self.root) + os.sep):
            real = real[len(os.path.realpath(self.root)):]
        return self._text(real, "the target of %s" % path)

    def which(self, name):
        return self._which(name) if self._which else None

    def trusted_exec(self, path, what):
        """The path to run for ``path``, a file the probe executes (statedir.trusted_file, the rule for every file
        the collection executes: resolved, then checked, then run by that path); StateError when it breaks it."""
        real = statedir.trusted_file(runner.absolute(self.path(path)), what=what)
        base = os.path.realpath(self.root) if self.root else ""
        return real[len(base):] if base and real.startswith(base + os.sep) else real

    def run(self, argv, timeout_s):
        if self._run is None:
            raise AcceptanceError("no command runner available to run %s" % argv[0])
        run = self._run(argv, timeout_s)
        # runner.run has decoded and counted; other runners (the Kubernetes pod's) give text without a count
        self.note("output of %s" % _command_label(argv), getattr(run, "undecodable", 0))
        return run

    def memlock(self):
        """(soft, hard) RLIMIT_MEMLOCK of this process in bytes; -1 means unlimited."""
        if self._memlock is not None:
            return self._memlock
        import resource  # Unix only; imported here so that the module stays importable elsewhere
        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        return (-1 if soft == resource.RLIM_INFINITY else soft, -1 if hard == resource.RLIM_INFINITY else hard)


def _command_label(argv):
    """How a command is named in notes: the tool's name and its first arguments (a script given with -c as <...>)."""
    words = [os.path.basename(argv[0])]
    for arg in argv[1:4]:
        words.append("<...>" if "\n" in arg or len(arg) > 60 else arg)
    return " ".join(words)


def read_infiniband(host):
    """{relative path: text or None} for rdma.build_hcas, or None when /sys/class/infiniband is absent."""
    names = host.listdir(IB_CLASS)
    if names is None:
        return None
    files = {}
    for hca in names:
        base = IB_CLASS + "/" + hca
        for name in HCA_FILES:
            files[hca + "/" + name] = host.read(base + "/" + name)
        files[hca + "/device@"] = host.realname(base + "/device")
        for ifname in host.listdir(base + "/device/net") or []:
            for name in NET_FILES:
                files["%s/device/net/%s/%s" % (hca, ifname, name)] = host.read("%s/device/net/%s/%s"
                                                                               % (base, ifname, name))
        for port in host.listdir(base + "/ports") or []:
            pbase = "%s/ports/%s" % (base, port)
            for name in PORT_FILES:
                files["%s/ports/%s/%s" % (hca, port, name)] = host.read(pbase + "/" + name)
            for index in host.listdir(pbase + "/gids") or []:
                gid = host.read("%s/gids/%s" % (pbase, index))
                files["%s/ports/%s/gids/%s" % (hca, port, index)] = gid
                if gid is None or gid.strip() == "0000:0000:0000:0000:0000:0000:0000:0000":
                    continue  # empty slot: its gid_attrs read fails with EINVAL
                for attr in ("types", "ndev"):
                    files["%s/ports/%s/gid_attrs/%s/%s" % (hca, port, attr, index)] = \
                        host.read("%s/gid_attrs/%s/%s" % (pbase, attr, index))
    return files
