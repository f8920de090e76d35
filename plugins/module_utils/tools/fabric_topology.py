# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric topology's adapter: ``OPTIONS``, ``records(host, params)``, ``from_output(path, hosts)`` (see
tools/__init__.py).

One ``net.topology`` record per host: which switch port each of the host's ports is cabled to, from LLDP (lldpctl,
lldptool per interface, hccn_tool per Ascend NPU) and from what the inventory declares (``declared``), a declared port
LLDP sees elsewhere a mismatch; or, in import mode, one record per named host from an ibnetdiscover output.
``host`` is a probe_host.Host (its ``run`` runs a command with a timeout, its ``which`` finds one, its root reads
sysfs): the fabric_topology module's runs commands through runner.run, a Kubernetes pod's through the entry program
(k8s_entry ``adapter``, kind fabric_topology). Every command has its time limit, and all of
them together at most ``FIXED_COMMANDS * timeout_s + PER_PORT_S * MAX_ASKED`` (Budget).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import collections
import math
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import imports, results, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import npu_smi, topology

OPTIONS = dict(
    lldp=dict(type="bool", default=True),
    declared=dict(type="raw", default={}),
    timeout_s=dict(type="int", default=30),
)
CHECK = "net.topology"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "net"
MODULE = "fabric_topology"
# the Kubernetes kind that runs records(host, params) in a pod per node (k8s_entry ``adapter``); import mode
# (from_output, an ibnetdiscover file) stays on the controller on both substrates
KUBERNETES = ("fabric_topology",)
NO_TOOL_NAME = "a record names the LLDP source it read (lldpctl, lldptool, hccn_tool), not one tool"
# how it runs and what its records come from
NO_ARGV = "fixed read-only commands on a probe_host.Host (lldpctl -f json, lldptool, hccn_tool -lldp), no options"
PARSERS = ("topology", "npu_smi")
GOLDEN = ("topology-import",)
IB_CLASS = "/sys/class/infiniband"
NET_CLASS = "/sys/class/net"


def rdma_netdevs(host):
    """{netdev: RDMA device} from sysfs (<IB_CLASS>/<dev>/device/net/<netdev>), read through ``host``'s root."""
    found = {}
    for dev in host.listdir(IB_CLASS) or []:
        for netdev in host.listdir("%s/%s/device/net" % (IB_CLASS, dev)) or []:
            found.setdefault(netdev, dev)
    return found


def _same(declared, observed):
    """Case-insensitive equality; a switch name without a domain equals the first label of one with it."""
    if declared is None or observed is None:
        return True
    one, two = str(declared).lower(), str(observed).lower()
    if one == two:
        return True
    return ("." in one) != ("." in two) and one.split(".", maxsplit=1)[0] == two.split(".", maxsplit=1)[0]


# the host's commands: one listing command per source (lldpctl, npu-smi info) with timeout_s each, and PER_PORT_S
# more for each interface (lldptool) and NPU (hccn_tool) asked, at most MAX_ASKED of them (the rest are not asked,
# and the record says so): the worst case, which the probe role's task timeout covers (roles/probe/tasks/topology.yml),
# is FIXED_COMMANDS * timeout_s + PER_PORT_S * MAX_ASKED and the last command's kill-after
FIXED_COMMANDS = 2
PER_PORT_S = 5
MAX_ASKED = 48


class Budget(object):
    """The time of one host's commands: each runs at most ``timeout_s`` (killed at it), all of them together at most
    ``FIXED_COMMANDS * timeout_s`` + ``PER_PORT_S`` per interface or NPU asked (:meth:`allow`)."""

    def __init__(self, timeout_s):
        self.timeout_s = timeout_s
        self.began = time.monotonic()
        self.total_s = FIXED_COMMANDS * timeout_s
        self.asked = 0

    def allow(self, names):
        """(asked, not asked) of ``names``: at most MAX_ASKED in all; each asked one adds PER_PORT_S to the budget."""
        room = max(0, MAX_ASKED - self.asked)
        asked = list(names)[:room]
        self.asked += len(asked)
        self.total_s += PER_PORT_S * len(asked)
        return asked, list(names)[room:]

    def left(self):
        """The limit of the next command (at least 1 s, at most timeout_s), None when the budget is spent."""
        left = self.began + self.total_s - time.monotonic()
        if left <= 0:
            return None
        return max(1, min(self.timeout_s, int(math.ceil(left))))

    def spent(self):
        return "not run: the host's LLDP time (%d s: %d x timeout_s %d s + %d s per interface or NPU asked) was spent " \
            "after %d s" % (self.total_s, FIXED_COMMANDS, self.timeout_s, PER_PORT_S, time.monotonic() - self.began)


def ask(host, argv, command, budget):
    """(run, problem): ``argv`` run within the budget; problem (run None) says why it gave nothing."""
    limit = budget.left()
    if limit is None:
        return None, budget.spent()
    try:
        return host.run(argv, limit), None
    except ToolTimeout as exc:
        return None, "%s ran past its limit of %d s and was killed (%s)" % (command, limit, exc)


def unread(problems):
    """One sentence of the interfaces/NPUs not read, [(name, why)], those with the same why together."""
    by_why = collections.OrderedDict()
    for name, why in problems:
        by_why.setdefault(why, []).append(name)
    return "not read: " + "; ".join("%s (%s)" % (", ".join(names), why) for why, names in by_why.items())


# what lldpctl 1.0.16 prints when no lldpd answers on its socket (tests/unit/fixtures/topology/lldpctl-*-no-daemon.txt)
NO_DAEMON = "unable to connect to socket"
# what open-lldp's lldptool prints when no lldpad answers (lldptool.c main: perror("Failed to connect to lldpad -
# clif_open"), exit status 255; tests/unit/fixtures/topology/lldpad-1.1-lldptool-t-n-i-eth0-no-daemon.txt)
LLDPAD_DOWN = "Failed to connect to lldpad"
# lldpad's answer for an interface it runs no LLDP agent on (lldptool_cmds.c print_status: cmd_device_not_found,
# cmd_agent_not_found; exit status 1): that interface has no neighbour to read, nothing failed
LLDPAD_NOT_MANAGED = ("Device not found or inactive", "Agent instance for device not found")


def _port(seen, netdev, source="lldp"):
    return {"switch": seen["switch"], "switch_port": seen["switch_port"], "source": source, "netdev": netdev,
            "chassis_id": seen["chassis_id"]}


def _last_line(text):
    return (text.strip().splitlines() or [""])[-1][:300]


class Source(object):
    """What one host's LLDP sources gave: ports, notes (why there is nothing), problems ([(name, why)] of what was
    not read: a failed or unrun command), raw (the first unreadable output), tools (those read)."""

    def __init__(self):
        self.ports, self.notes, self.problems, self.raw, self.tools = {}, [], [], None, []

    def failed(self, name, why, raw=None):
        self.problems.append((name, why))
        if self.raw is None and raw:
            self.raw = raw


def lldpctl_ports(host, lldpctl, budget, out):
    """lldpd's neighbours (``lldpctl -f json``) into ``out``; True when lldpd is not running (lldptool may answer)."""
    argv = [lldpctl, "-f", "json"]
    run, problem = ask(host, argv, "lldpctl -f json", budget)
    if problem:
        out.failed("the host's interfaces", problem)
        return False
    said = (run.stderr or run.stdout).strip()[-300:]
    if run.rc != 0 and NO_DAEMON in said:
        # installed, its daemon not running: the topology cannot be learned here, nothing is wrong with the host
        out.notes.append("lldpd is not running (lldpctl: %s)" % said.splitlines()[-1])
        return True
    if run.rc != 0:
        out.failed("the host's interfaces", "lldpctl -f json exited with %d: %s" % (run.rc, said), run.output)
        return False
    parsed = topology.parse_lldpctl_json(run.stdout)
    if parsed["error"]:
        out.failed("the host's interfaces", parsed["error"], run.output)
        return False
    names = rdma_netdevs(host)
    out.ports.update((names.get(netdev, netdev), _port(seen, netdev)) for netdev, seen in sorted(parsed["neighbors"].items()))
    if not parsed["neighbors"]:
        out.notes.append("lldpctl saw no LLDP neighbour")
    return False


def physical_netdevs(host, names):
    """The interfaces lldptool is asked about: each of /sys/class/net with a device (a NIC port, not a bridge, veth,
    bond or lo: LLDP is per cable), and every interface of an RDMA device (``names``)."""
    found = [netdev for netdev in host.listdir(NET_CLASS) or [] if host.exists("%s/%s/device" % (NET_CLASS, netdev))]
    return sorted(set(found) | set(names))


def lldptool_ports(host, lldptool, budget, out):
    """lldpad's neighbours (``lldptool -t -n -i <netdev>``, the neighbour's TLVs, per interface) into ``out``; an
    interface whose command failed or was not run (the budget spent, MAX_ASKED) is a problem, the others are read."""
    names = rdma_netdevs(host)
    netdevs, over = budget.allow(physical_netdevs(host, names))
    for netdev in over:
        out.failed(netdev, "not asked: at most %d interfaces and NPUs are asked" % MAX_ASKED)
    unmanaged, found = [], len(out.ports)
    for netdev in netdevs:
        command = "lldptool -t -n -i %s" % netdev
        run, problem = ask(host, [lldptool, "-t", "-n", "-i", netdev], command, budget)
        if problem:
            out.failed(netdev, problem)
        elif run.rc != 0 and LLDPAD_DOWN in run.output:
            out.notes.append("lldpad is not running (lldptool: %s)" % _last_line(run.output))
            return
        elif run.rc != 0 and any(word in run.output for word in LLDPAD_NOT_MANAGED):
            unmanaged.append(netdev)
        elif run.rc != 0:
            out.failed(netdev, "%s exited with %d: %s" % (command, run.rc, _last_line(run.output)), run.output)
        else:
            parsed = topology.parse_lldptool(run.stdout)
            if parsed["error"]:
                out.failed(netdev, "%s: %s" % (command, parsed["error"]), run.output)
            elif parsed["neighbor"]:
                out.ports[names.get(netdev, netdev)] = _port(parsed["neighbor"], netdev)
    if not netdevs and not over:
        out.notes.append("no network interface with a device to ask lldptool about")
    elif len(out.ports) == found:
        why = " (lldpad manages no LLDP agent on %s)" % ", ".join(unmanaged) if unmanaged else ""
        out.notes.append("lldptool saw no LLDP neighbour on %s%s" % (", ".join(netdevs), why))


def lldp_ports(host, budget, out):
    """The LLDP source of the host's interfaces into ``out``: lldpd's lldpctl where installed and its daemon runs,
    else open-lldp's lldptool (lldpad)."""
    lldpctl, lldptool = host.which("lldpctl"), host.which("lldptool")
    if lldpctl and not (lldpctl_ports(host, lldpctl, budget, out) and lldptool):
        out.tools.append("lldpctl")
        return
    if lldptool:
        out.tools.append("lldptool")
        lldptool_ports(host, lldptool, budget, out)
        return
    out.notes.append("neither lldpctl (lldpd) nor lldptool (lldpad) is installed (no LLDP source)")


def npu_devices(host, budget, out):
    """(devices, hccn_tool) of the host's Ascend NPUs (``npu-smi info``, the ids and hccn_tool as env_probe finds
    them); ([], None) with a note or problem in ``out`` where there is nothing to ask."""
    smi = host.which("npu-smi")
    if not smi:
        return [], None
    # the probes' NPU helpers, loaded on an NPU host only (a host without npu-smi does not load the probes)
    from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe  # pylint: disable=import-outside-toplevel
    out.tools.append("hccn_tool")
    run, problem = ask(host, [smi, "info"], "npu-smi info", budget)
    if problem or run.rc != 0:
        out.failed("the NPUs", problem or "npu-smi info exited with %d: %s" % (run.rc, _last_line(run.output)),
                   None if problem else run.output)
        return [], None
    devices = [env_probe.npu_device_id(npu) for npu in npu_smi.parse_info(run.stdout)["npus"]]
    try:
        tool = env_probe.hccn_tool_path(host)
    except statedir.StateError as exc:      # root runs only what root could have written alone
        out.failed("the NPUs", "hccn_tool not run: %s" % exc, None)
        return [], None
    if not devices:
        out.notes.append("npu-smi info lists no NPU")
    elif not tool:
        out.notes.append("hccn_tool not found (PATH, %s): no NPU LLDP source" % ", ".join(env_probe.HCCN_TOOL_PATHS))
    return (devices, tool) if tool else ([], None)


def npu_ports(host, budget, out):
    """The neighbours of the host's Ascend NPUs' RoCE ports into ``out``: ``hccn_tool -i <device> -lldp -g`` for
    each NPU, port ``npu<device>``; an NPU whose command failed or was not run is a problem, the others are read."""
    devices, tool = npu_devices(host, budget, out)
    asked, over = budget.allow(devices)
    for device in over:
        out.failed("npu%s" % device, "not asked: at most %d interfaces and NPUs are asked" % MAX_ASKED)
    found = 0
    for device in asked:
        command = "hccn_tool -i %s -lldp -g" % device
        run, problem = ask(host, [tool, "-i", str(device), "-lldp", "-g"], command, budget)
        if problem or run.rc != 0:
            out.failed("npu%s" % device, problem or "%s exited with %d: %s" % (command, run.rc, _last_line(run.output)),
                       None if problem else run.output)
            continue
        parsed = topology.parse_lldptool(run.stdout)
        if parsed["error"]:
            out.failed("npu%s" % device, "%s: %s" % (command, parsed["error"]), run.output)
        elif parsed["neighbor"]:
            out.ports["npu%s" % device] = _port(parsed["neighbor"], None)
            found += 1
    if asked and not found:
        out.notes.append("hccn_tool saw no LLDP neighbour on NPU device(s) %s" % ", ".join(map(str, asked)))


def observed_ports(host, timeout_s):
    """The :class:`Source` of every LLDP source of the host: its interfaces' and its NPUs'."""
    budget, out = Budget(timeout_s), Source()
    lldp_ports(host, budget, out)
    npu_ports(host, budget, out)
    return out


def declared_to_ports(declared, names, interfaces=()):
    """The declared ports keyed like LLDP's: a netdev of an RDMA device is read as the device; a network interface
    of the host (``interfaces``, /sys/class/net) that is no RDMA device's keeps its name and is its own netdev (a
    management NIC: the fleet analyses read only RDMA ports as fabric ports, plugin_utils/cabling.fabric_ports)."""
    netdevs = dict((dev, netdev) for netdev, dev in names.items())
    ports = {}
    for port, entry in declared.items():
        name = names.get(port, port)
        if port in names:
            netdev = port
        else:
            netdev = netdevs.get(port) or (port if port in interfaces else None)
        ports[name] = {"switch": entry["switch"], "switch_port": entry["switch_port"], "source": "declared",
                       "netdev": netdev, "chassis_id": None}
    return ports


def merge(declared, observed):
    """(ports, mismatches): LLDP's ports over the declared ones; a declared port LLDP sees elsewhere is a mismatch."""
    ports, mismatches = dict(declared), []
    for port, seen in observed.items():
        want = declared.get(port)
        if want and not (_same(want["switch"], seen["switch"]) and _same(want["switch_port"], seen["switch_port"])):
            mismatches.append({"port": port, "declared": {"switch": want["switch"], "switch_port": want["switch_port"]},
                               "observed": {"switch": seen["switch"], "switch_port": seen["switch_port"]}})
        ports[port] = seen
    return ports, mismatches


def host_record(host, params, started):
    """The one record of this host (LLDP and declared): every port read is kept, a command that failed or was not
    run makes it ``warn`` naming what was not read and why; ``error`` only when that leaves no port at all."""
    declared, errors = topology.declared_ports(params["declared"], "declared")
    if errors:
        return results.error(CHECK, "declared topology: %s" % "; ".join(errors), started=started)
    began = time.monotonic()
    out = Source()
    if params["lldp"]:
        out = observed_ports(host, params["timeout_s"])
    else:
        out.notes.append("LLDP not read (lldp: false)")
    interfaces = set(host.listdir(NET_CLASS) or []) if declared else set()
    ports, mismatches = merge(declared_to_ports(declared, rdma_netdevs(host), interfaces), out.ports)
    kwargs = dict(facts={"ports": ports, "mismatches": mismatches}, metrics={"ports_count": len(ports)},
                  params={"lldp": params["lldp"], "declared_ports": sorted(declared), "lldp_tools": out.tools},
                  started=started, duration_s=time.monotonic() - began, tool={"name": out.tools[0]} if out.tools else {})
    reasons = ["%s is cabled to %s port %s, declared %s port %s" % (
        m["port"], m["observed"]["switch"], m["observed"]["switch_port"], m["declared"]["switch"],
        m["declared"]["switch_port"]) for m in mismatches]
    if out.problems:
        reasons.append(unread(out.problems))
    if out.problems and not ports:
        return results.make(CHECK, "error", reason="; ".join(reasons), raw=out.raw, **kwargs)
    if reasons:
        return results.make(CHECK, "warn", reason="; ".join(reasons), raw=out.raw, **kwargs)
    if not ports:
        note = "; ".join(out.notes) or "no LLDP neighbour"
        return results.make(CHECK, "skip", reason="no topology known: %s and nothing declared for this host" % note, **kwargs)
    return results.make(CHECK, "pass", **kwargs)


def _short(name):
    return name.split(".")[0].lower()


def ib_records(text, hosts, started):
    """One record per host of ``hosts`` from an ibnetdiscover output."""
    parsed = topology.parse_ibnetdiscover(text)
    if parsed["error"]:
        return [results.error(CHECK, "ibnetdiscover output: %s" % parsed["error"], raw=text, host=name, started=started)
                for name in hosts]
    by_host = topology.ibnetdiscover_hosts(parsed)
    short = {}
    for name in by_host:
        short.setdefault(_short(name), name)
    records = []
    params = {"source": "ibnetdiscover", "switches_count": len(parsed["switches"]), "unnamed_links": parsed["unnamed"]}
    for name in hosts:
        found = by_host.get(name) or by_host.get(short.get(_short(name), ""))
        if not found:
            records.append(results.skip(CHECK, "the ibnetdiscover output names no CA of %s (no node description "
                                        "'%s <hca>'; %d CA link(s) without a host name)" % (name, _short(name), parsed["unnamed"]),
                                        host=name, params=params, started=started))
            continue
        ports = dict((hca, {"switch": link["switch"], "switch_port": link["switch_port"], "source": "ibnetdiscover",
                            "netdev": None, "chassis_id": "S-%s" % link["switch_guid"]}) for hca, link in found.items())
        reason = None if not parsed["problems"] else "; ".join(parsed["problems"])
        records.append(results.make(CHECK, "pass", reason=reason, host=name, facts={"ports": ports, "mismatches": []},
                                    metrics={"ports_count": len(ports)}, params=params, started=started))
    return records


def records(host, params, started=None):
    """The one ``net.topology`` record of ``host`` (LLDP and declared, ``params``: OPTIONS's)."""
    return [host_record(host, params, started or results.utc_now())]


def from_output(path, hosts, started=None):
    """Import mode: one record per host of ``hosts`` from a saved ibnetdiscover output."""
    return ib_records(imports.read_output(path), hosts, started or results.utc_now())
