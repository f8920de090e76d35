# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest server/client pairs: argv, GID choice, expectations, the client round (private).

The per-host sweep runner (perftest_sweep.py, the one RDMA protocol) runs a step of its schedule with these:

- its servers: one detached server per device (TCP port ``port + i`` for the i-th device, detached.start);
- ``run_clients`` here starts one client per device at once, waits for all, and
  re-starts a client whose server does not answer yet (perftest's "Couldn't
  connect" family) until ``connect_timeout_s`` (longer while ``keep_waiting`` says the server's
  host is only late: the sweep runner asks that host's runner, see perftest_sweep); any other
  failure is final.

Records are the tool adapter's (tools/perftest.py, ``records(text, ctx)``): the client side is ``rdma.<test>``
(host = client, peer = server, target = the client's device); the server side is ``rdma.<test>.server`` (host =
server, peer = client) and carries no expectations: it is there for the errors and for what the server saw, never
counted twice in the pairwise analyses. Their built-in expectations are here (``default_rules``).

Units: the parser keeps the tool's figures (and they stay in ``series``); the
conversion to Gbit/s uses perftest's own definitions (see parsers/perftest.py).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, detached, expectations, results
from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nvidia_smi
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest as parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import DETACHED_TIMEOUT_RCS

TESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_bw",
         "ib_atomic_lat")
# perftest's atomic operations (-A, perftest_parameters.c atomicTypesStr; FETCH_AND_ADD when -A is not given)
ATOMIC_OPERATIONS = ("FETCH_AND_ADD", "CMP_AND_SWAP")
DEFAULT_PORT = 18515
# The options the perftest and perftest_sweep modules share (documented by the doc fragment
# aifabric.acceptance._perftest_test), and their ranges
TEST_SPEC = {
    "host_name": {"type": "str"},
    "run_id": {"type": "str", "default": "default"},
    "state_root": {"type": "path"},
    "keep_state": {"type": "bool", "default": False},
    "ib_port": {"type": "int", "default": 1},
    "gid_index": {"type": "int"},
    "size": {"type": "int"},
    "all_sizes": {"type": "bool", "default": False},
    "iterations": {"type": "int"},
    "duration_s": {"type": "int"},
    "qps": {"type": "int"},
    "bidirectional": {"type": "bool", "default": False},
    "rdma_cm": {"type": "bool", "default": False},
    "report_gbits": {"type": "bool", "default": True},
    "ignore_cpu_freq": {"type": "bool", "default": False},
    "atomic_operation": {"type": "str", "choices": list(ATOMIC_OPERATIONS)},
    "extra_args": {"type": "list", "elements": "str", "default": []},
    "timeout_s": {"type": "int", "default": 120},
    "cpu_governor": {"type": "str"},
    "cpu_sysfs": {"type": "path", "default": "/sys/devices/system/cpu"},
    "sysfs_root": {"type": "str", "default": ""},
    "tool_dir": {"type": "path"},
    "expect": {"type": "dict", "default": {}},
    "line_rate_floor_pct": {"type": "float", "default": thresholds.RDMA_LINE_RATE_PCT["value"]},
}
TEST_RANGES = {
    "ib_port": (1, 255), "gid_index": (0, 255), "size": argspec.POSITIVE, "iterations": argspec.POSITIVE,
    "duration_s": argspec.POSITIVE, "qps": (1, 65536), "timeout_s": argspec.POSITIVE, "line_rate_floor_pct": (0, 100),
}
NAME_RE = re.compile(r"^[A-Za-z0-9_.:\-]+$")
VERSION_RE = re.compile(r"Version:\s*(\S+)")
# NGC multinode acceptance criteria for small-message latency (write/send 2.5 us, read 4.5 us).
BW_METRICS = ("bw_avg_gbit_s", "bw_peak_gbit_s", "msg_rate_mpps")
LAT_METRICS = ("lat_min_us", "lat_max_us", "lat_typical_us", "lat_avg_us", "lat_stdev_us", "lat_p99_us", "lat_p999_us")
INSTALL_HINT = "install perftest (Debian/Ubuntu: apt-get install perftest; RHEL: dnf install perftest), " \
               "or role aifabric.acceptance.perftest"


def kind_of(test):
    return "bw" if test.endswith("_bw") else "lat"


def verb_of(test):
    return test.split("_")[1]


# The tests whose bandwidth is a share of the line rate (the hardware-ceiling analysis judges them): not the atomic
# tests, whose 8-byte operations make their bandwidth a message rate
LINE_RATE_TESTS = tuple(test for test in TESTS if verb_of(test) != "atomic")


# A peer address as perftest's client takes it (its last argv word, resolved with getaddrinfo): an IP address or a
# DNS host name (RFC 1123 labels; "_" too, as inventory names and Kubernetes service names have it) - never a word
# that starts with "-", which perftest would read as one of its options (issue 34).
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
HOST_NAME_RE = re.compile(r"(?=.{1,253}\Z)%s(?:\.%s)*\.?\Z" % (_LABEL, _LABEL))


def check_peer_address(value, what="peer address"):
    """``value`` when it is an IP address or a host name (HOST_NAME_RE), else AcceptanceError saying why: the one
    check of every address that reaches perftest's argv (the sweep's ``peers`` on the controller, every client argv
    of the SSH runner and of the Kubernetes planner and pod entry, build_argv)."""
    import ipaddress

    if not isinstance(value, str) or not value:
        raise AcceptanceError("%s %r must be an IP address or a host name" % (what, value))
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if not HOST_NAME_RE.match(value):
        raise AcceptanceError("%s %r is neither an IP address nor a host name (letters, digits, '-' and '_' in "
                              "dot-separated labels, none starting with '-')" % (what, value[:200]))
    return value


def check_name(name, what):
    if name is None:
        return None
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise AcceptanceError("%s %r is not a valid name (letters, digits, _ . : - only)" % (what, name))
    return name


# --------------------------------------------------------------------------- sysfs: ports and GIDs

def find_port(hcas, device, ib_port):
    """The port dict of build_hcas output for device/port, or None."""
    for hca in hcas or []:
        if hca.get("name") == device:
            for port in hca.get("ports", []):
                if port.get("port") == ib_port:
                    return port
    return None


def select_gid(port):
    """GID index for perftest ``-x``: (index or None, how it was chosen).

    InfiniBand ports need none. On Ethernet (RoCE) ports: the RoCE v2 GID that
    maps an IPv4 address of the port's netdev (lowest index when several),
    as operators pick it by hand from show_gids; on IPv6-only fabrics a routable
    (not fe80::) RoCE v2 GID. Raises AcceptanceError when a RoCE port has
    neither (perftest would pick GID 0, a link-local RoCE v1 GID that does not
    route).
    """
    layer = (port.get("link_layer") or "").lower()
    if layer in ("infiniband", "ib"):
        return None, "InfiniBand port: no GID index needed"
    chosen = routable_gids(port)
    if not chosen:
        raise AcceptanceError("no RoCE v2 GID with an IPv4 address (nor a routable IPv6 one) on port %s "
                              "(GIDs: %s); give gid_index"
                              % (port.get("port"), _gid_list(port)))
    gid = chosen[0]
    address = gid.get("ipv4") or gid.get("gid")
    return gid["index"], "RoCE v2 GID %d (%s on %s)" % (gid["index"], address, gid.get("netdev") or "?")


def routable_gids(port):
    """The port's RoCE v2 GIDs perftest may use, best first (lowest index first): those that map an IPv4 address,
    else (IPv6-only fabrics) those that are not link-local fe80::; the ones on the port's netdev when any are."""
    gids = port.get("gids") or []
    v2 = [g for g in gids if g.get("type") == "RoCE v2" and g.get("ipv4")]
    if not v2:
        v2 = [g for g in gids if g.get("type") == "RoCE v2" and not (g.get("gid") or "").lower().startswith("fe80:")]
    netdevs = set(n.get("name") for n in port.get("netdevs") or [])
    on_netdev = [g for g in v2 if g.get("netdev") in netdevs] if netdevs else v2
    return sorted(on_netdev or v2, key=lambda g: g["index"])


def _gid_list(port):
    """The port's GIDs as an error message lists them (index=type address)."""
    return ", ".join("%d=%s %s" % (g["index"], g.get("type"), g.get("ipv4") or g.get("gid"))
                     for g in port.get("gids") or []) or "none"


# --------------------------------------------------------------------------- GPUDirect: which GPU serves which HCA

CUDA_AUTO = "auto"
CUDA_LINK_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")   # closest first (nvidia-smi topo -m legend)
CUDA_RE = re.compile(r"^(auto|\d{1,4})$")


def topology_from_probe(records):
    """(facts of env_probe's ``gpu.topology`` record, None) or (None, why there is none) from a host's GPU records.

    ``records``: the ``gpu.*`` records of ``env_probe`` (groups ``gpu``) on this host, as a list. The topology
    facts are ``matrix`` (``{GPU0: {NIC0: PIX, ...}}``, from ``nvidia-smi topo -m``) and ``nic_names``
    (``{NIC0: mlx5_0}``); ``gpu_nic_affinity`` in the same facts is the closest-NIC summary of that matrix.
    """
    records = [r for r in (records if isinstance(records, list) else []) if isinstance(r, dict)]
    for record in records:
        facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
        matrix, names = facts.get("matrix"), facts.get("nic_names") or {}
        if record.get("check") == "gpu.topology" and isinstance(matrix, dict) and matrix:
            if not (all(isinstance(row, dict) for row in matrix.values()) and isinstance(names, dict)):
                return None, "the gpu.topology record's matrix is not a mapping of mappings (not env_probe's?)"
            return facts, None
    for record in records:
        if record.get("check") in ("gpu.topology", "gpu.inventory") and record.get("status") in ("skip", "error"):
            return None, "%s %s: %s" % (record["check"], record.get("status"), record.get("reason") or "no reason given")
    if not records:
        return None, "no GPU probe records for this host (env_probe groups [gpu] did not run)"
    return None, "no gpu.topology record with a topology matrix among the GPU probe records"


def gpus_for_hcas(devices, topology):
    """Which GPU serves which HCA for GPUDirect RDMA: ``{device: {"gpu": index or None, "link": cell or None,
    "why": text}}``. Pure; ``topology`` is the gpu.topology facts (``matrix``, ``nic_names``).

    Closest first, by the ``nvidia-smi topo -m`` cell between the GPU and the HCA: PIX > PXB > PHB > NODE > SYS.
    One GPU per HCA where possible: every (HCA, GPU) pair is taken in the order (link, HCA's rail index, GPU
    index) and an HCA gets the first GPU no other HCA has; an HCA left without one (more HCAs than GPUs) shares
    the closest GPU, the least shared one first, then the lowest index. Ties are broken by rail order and GPU
    index, so the choice never depends on dict order. An HCA the matrix does not name, or a host without GPUs
    or NICs in the matrix, gets ``gpu: None`` with the reason (host memory).
    """
    matrix = (topology or {}).get("matrix") or {}
    edges, out = _pcie_edges(devices, matrix, (topology or {}).get("nic_names") or {})
    edges.sort()
    used = _give_free_gpus(edges, out)
    _share_gpus(devices, edges, out, used)
    return out


def _no_gpu(why):
    return {"gpu": None, "link": None, "why": why}


def _topology_gpus(matrix):
    """The matrix's GPU rows (GPU0, GPU1, ...), in index order."""
    return sorted((name for name in matrix if re.match(r"^GPU\d{1,4}$", str(name))), key=lambda g: int(g[3:]))


def _nic_columns(matrix, names):
    """``{HCA name: its column in the matrix}``: the NIC columns (NIC0, ...) named through ``nic_names``, the
    first column of a name winning."""
    columns = {}
    for row in matrix.values():
        for column in row or {}:
            columns.setdefault(column, None)
    nic_of = {}
    for column in columns:
        if not re.match(r"^GPU\d+$", str(column)):
            nic_of.setdefault(str(names.get(column, column)), column)
    return nic_of


def _pcie_edges(devices, matrix, names):
    """(edges, out): every PCIe path between a GPU and an HCA as ``(link rank, rail, GPU index, device, cell)``,
    and ``out`` holding the HCAs no GPU can serve, with the reason."""
    gpus = _topology_gpus(matrix)
    nic_of = _nic_columns(matrix, names)
    out = {}
    edges = []
    for rail, device in enumerate(devices or []):
        column = nic_of.get(device)
        if not gpus:
            out[device] = _no_gpu("no GPU in nvidia-smi topo -m")
        elif column is None:
            out[device] = _no_gpu("%s is not in nvidia-smi topo -m (NICs there: %s)"
                                  % (device, ", ".join(sorted(nic_of)) or "none"))
        else:
            mine = _edges_to(device, rail, column, matrix, gpus)
            edges.extend(mine)
            if not mine:
                out[device] = _no_gpu("no PCIe path from any GPU to %s in nvidia-smi topo -m" % device)
    return edges, out


def _edges_to(device, rail, column, matrix, gpus):
    """The PCIe paths from each GPU to the HCA of matrix column ``column`` (SOC: old drivers' SYS)."""
    edges = []
    for gpu in gpus:
        cell = (matrix.get(gpu) or {}).get(column)
        if cell in CUDA_LINK_ORDER or cell == "SOC":
            edges.append((nvidia_smi.link_rank(cell), rail, int(gpu[3:]), device, "SYS" if cell == "SOC" else cell))
    return edges


def _give_free_gpus(edges, out):
    """One GPU per HCA, closest first (``edges`` sorted): sets ``out`` for each HCA that gets a GPU of its own and
    returns ``{GPU index: [the HCA it serves]}``."""
    used = {}
    for _rank, _rail, gpu, device, cell in edges:
        if device in out or gpu in used:
            continue
        used[gpu] = [device]
        out[device] = {"gpu": gpu, "link": cell, "why": "GPU%d is the closest free GPU (%s) to %s" % (gpu, cell, device)}
    return used


def _share_gpus(devices, edges, out, used):
    """The HCAs left without a GPU of their own (more HCAs than GPUs) share the closest GPU, the least shared one
    first, then the lowest index."""
    for device in devices or []:
        mine = [edge for edge in edges if edge[3] == device]
        if device in out or not mine:
            continue
        _rank, _rail, gpu, _device, cell = min(mine, key=lambda e: (e[0], len(used.get(e[2], [])), e[2]))
        shared = used.setdefault(gpu, [])
        out[device] = {"gpu": gpu, "link": cell, "why": "GPU%d is the closest GPU (%s) to %s, shared with %s (more "
                       "HCAs than GPUs)" % (gpu, cell, device, ", ".join(shared) or "none")}
        shared.append(device)


def cuda_facts(devices, params):
    """Per device, the facts saying where its buffers live: ``memory`` (``gpu``/``host``), ``cuda_device`` (the GPU
    index passed as ``--use_cuda``), ``cuda_link`` and ``cuda_choice`` (how it was chosen).

    ``params``: ``use_cuda`` (None: host memory; a GPU index: that GPU for every device; ``auto``: gpus_for_hcas on
    the host's ``gpu_probe`` records, host memory with the reason where there is no topology or no GPU for the HCA).
    """
    value = params.get("use_cuda")
    if value is None or value == "":
        return dict((d, {"memory": "host"}) for d in devices or [])
    value = str(value).strip()
    if not CUDA_RE.match(value):
        raise AcceptanceError("use_cuda %r is neither a GPU index nor 'auto'" % (value,))
    if value != CUDA_AUTO:
        return dict((d, {"memory": "gpu", "cuda_device": int(value), "cuda_choice": "given (use_cuda %s)" % value})
                    for d in devices or [])
    topology, missing = topology_from_probe(params.get("gpu_probe"))
    chosen = gpus_for_hcas(devices, topology) if topology else {}
    out = {}
    for device in devices or []:
        pick = chosen.get(device) or {"gpu": None, "link": None, "why": missing}
        if pick["gpu"] is None:
            out[device] = {"memory": "host", "cuda_device": None,
                           "cuda_choice": "use_cuda auto fell back to host memory: %s" % pick["why"]}
        else:
            # the index is nvidia-smi's (PCI bus order): the sweep runs perftest with CUDA_DEVICE_ORDER=PCI_BUS_ID
            out[device] = {"memory": "gpu", "cuda_device": pick["gpu"], "cuda_link": pick["link"],
                           "cuda_device_order": "PCI_BUS_ID",
                           "cuda_choice": "use_cuda auto: %s" % pick["why"]}
    return out


# --------------------------------------------------------------------------- argv

def build_argv(binary, params, device, tcp_port, gid_index, side, peer_address=None, json_file=None):
    """perftest argv for one side of one device (a list; never a shell string)."""
    test = params["test"]
    argv = [binary, "-d", device, "-i", str(params["ib_port"]), "-p", str(tcp_port)]
    if gid_index is not None:
        argv += ["-x", str(gid_index)]
    if verb_of(test) == "atomic":
        # perftest fixes the atomic tests' size at 8 bytes and exits on -s ("Message size cannot be changed for
        # Atomic tests", perftest_parameters.c); -A is theirs alone (the other tests refuse it)
        if params.get("atomic_operation"):
            argv += ["-A", params["atomic_operation"]]
    elif params.get("all_sizes"):
        argv.append("-a")
    elif params.get("size"):
        argv += ["-s", str(params["size"])]
    if params.get("duration_s"):
        argv += ["-D", str(params["duration_s"])]
    elif params.get("iterations"):
        argv += ["-n", str(params["iterations"])]
    if kind_of(test) == "bw":
        if params.get("qps"):
            argv += ["-q", str(params["qps"])]
        if params.get("bidirectional"):
            argv.append("-b")
        if params.get("report_gbits", True):
            argv.append("--report_gbits")
    if params.get("ignore_cpu_freq"):
        argv.append("-F")
    if params.get("rdma_cm"):
        argv.append("-R")
    cuda = params.get("use_cuda")
    if cuda is not None and str(cuda) == CUDA_AUTO:
        raise AcceptanceError("use_cuda auto is chosen per device (perftest_run.device_plan), not passed to perftest")
    if cuda is not None:
        argv.append("--use_cuda=%s" % cuda)
    if json_file:
        argv += ["--out_json", "--out_json_file=%s" % json_file]
    argv += list(params.get("extra_args") or [])
    if side == "client":
        argv.append(check_peer_address(peer_address))
    return argv


def parse_version(text):
    match = VERSION_RE.search(text or "")
    return match.group(1) if match else None


# --------------------------------------------------------------------------- expectations

# Bandwidth floors and latency limits are data with their sources in thresholds.py (RDMA_*).

def bw_floor_pct(test, size, configured_pct):
    """(floor in % of line rate or None, source) for a bandwidth test at message size ``size``."""
    verb = verb_of(test)
    if not configured_pct:
        return None, "line_rate_floor_pct is 0 (default bandwidth floor turned off)"
    if verb == "atomic":
        return None, ("no default floor for %s: an atomic moves 8 bytes, so its bandwidth is a message rate, not a "
                      "share of line rate, and no source gives an atomic message-rate floor" % test)
    for smallest, pct, source in thresholds.RDMA_BW_FLOORS.get(verb, ()):
        if size is not None and size >= smallest:
            return (configured_pct if pct is None else min(pct, configured_pct)), source
    bands = thresholds.RDMA_BW_FLOORS.get(verb)
    if not bands:
        return None, "no default floor for %s (no real capture to derive one from)" % test
    return None, "no default floor for %s at %s B (the smallest size with one is %d B): %s" % (
        test, size, bands[-1][0], thresholds.RDMA_NO_FLOOR.get(verb, ""))


def default_rules(test, metrics, facts, params):
    """The built-in expectations (each names its source); user ``expect`` entries override them."""
    rules = {}
    if kind_of(test) == "bw":
        local = facts.get("port_rate_gbit_s")
        peer = params.get("peer_rate_gbit_s")
        known = [r for r in (local, peer) if r]
        size = metrics.get("msg_size_bytes")
        pct, why = bw_floor_pct(test, size, params.get("line_rate_floor_pct"))
        if known and pct:
            lower = min(known)
            # perftest sums both directions for -b, except ib_send_bw in duration mode, which prints
            # only the local side (send_bw.c: xchg_bw_reports only "if (duplex && test_type != DURATION)";
            # perftest_parameters.c print_report_bw prints the local report for recv-completion verbs in
            # duration mode).
            factor = 2 if facts.get("bidirectional") and not (
                verb_of(test) == "send" and params.get("duration_s")) else 1
            floor = round(lower * pct / 100.0 * factor, 3)
            where = "lower active port rate of both ends" if len(known) == 2 else \
                "active port rate of %s (peer rate unknown)" % ("this end" if local else "the peer")
            rules["bw_avg_gbit_s"] = {
                "min": floor,
                "source": "%s %% of the %s, %s Gb/s%s, for %s at %s B; basis: %s" % (
                    _num(pct), where, _num(lower), ", x2 bidirectional" if factor == 2 else "", test, size, why),
            }
        elif known and params.get("line_rate_floor_pct"):
            # No floor known for this size: judge nothing, and say so in the record's expect.
            rules["bw_avg_gbit_s"] = {"source": why}
    else:
        limit = thresholds.RDMA_LAT_LIMITS_US.get(verb_of(test))
        size = metrics.get("msg_size_bytes")
        if limit and size is not None and size <= thresholds.RDMA_LAT_SMALL_BYTES:
            if metrics.get("lat_typical_us") is None and metrics.get("lat_avg_us") is not None:
                # duration mode (-D) prints only t_avg: the same limit on the average, and the source says so
                rules["lat_avg_us"] = {"max": limit, "source": thresholds.RDMA_LAT_SOURCE % verb_of(test)
                                       + " (duration mode prints no typical latency: judged on the average)"}
            else:
                rules["lat_typical_us"] = {"max": limit, "source": thresholds.RDMA_LAT_SOURCE % verb_of(test)}
    # user rules: per metric for every test, or per check ({"rdma.ib_write_lat": {lat_p99_us: {max: 5}}}); a
    # latency metric's rule does not apply to a bandwidth test, nor a bandwidth metric's to a latency test (one
    # rdma_expect serves every test of a sweep)
    other = BW_METRICS if kind_of(test) == "lat" else LAT_METRICS
    for name, rule in expectations.rules_for_check(params.get("expect") or {}, "rdma.%s" % test).items():
        if name in other:
            continue
        if rule is None:
            rules.pop(name, None)
        else:
            rule = dict(rule)
            rule.setdefault("source", "user expectation")
            rules[name] = rule
    return rules


def _num(value):
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- records

def build_records(text, rc, ctx):
    """Compatibility name for tools.perftest.side_records (the records of one side from its output and a dict of
    fields); callers use the adapter's ``records(text, ctx)``."""
    # imported here: the adapter imports this module (argv, expectations)
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest as adapter
    return adapter.side_records(text, rc, ctx)


# --------------------------------------------------------------------------- orchestration

@dataclass(eq=False)
class Job:
    """One device of one side: its argv, state directory and current handle."""

    index: int
    device: Optional[str]
    tcp_port: Optional[int]
    argv: List[str]
    state_dir: str
    facts: Dict[str, Any]
    handle: Optional[Dict[str, Any]] = None
    attempts: int = 0
    started: Optional[str] = None
    started_mono: Optional[float] = None
    result: Optional[Tuple[str, Optional[int], bool]] = None  # (text, rc, timed_out)


def text_of(handle):
    """stdout then stderr of a detached process, as one text."""
    out, err = detached.read(handle)
    if err and out and not out.endswith("\n"):
        out += "\n"
    return out + err


def run_clients(jobs, timeout_bin, timeout_s, connect_timeout_s, retry_delay_s, env=None, poll_s=0.1,
                start=None, started=None, give_up=None, keep_waiting=None, ready=None, tick=None):
    """Run every client job at once; re-start those whose server is not listening yet.

    Returns nothing; sets job.result = (text, rc, timed_out) and job.attempts. ``started(handle)`` is called
    with every attempt's handle (the sweep runner keeps them to stop them on every path); ``give_up()``, when
    given, is asked before each re-start: True stops the retries (the server's host was found dead);
    ``keep_waiting()``, asked when ``connect_timeout_s`` has passed, True gives another ``connect_timeout_s``
    (the server's host is alive and still busy with an earlier step; the caller bounds how often it says so: the
    sweep runner's LagBound); ``ready(wait_s)``, when given, waits at
    most ``wait_s`` for word that the server listens (True): a refused client then re-starts at once instead of
    after ``retry_delay_s`` (the sweep runner's notice, see perftest_sweep); ``tick()``, when given, is called
    once per poll (the sweep runner checks its lease there: what it raises ends the wait, the caller stops the
    clients).
    """
    clients = _ClientRound(jobs, connect_timeout_s, retry_delay_s, give_up=give_up, keep_waiting=keep_waiting,
                           ready=ready)
    launch = start or detached.start

    def start_attempt(job):
        job.attempts += 1
        attempt_dir = os.path.join(job.state_dir, "attempt-%d" % job.attempts)
        job.handle = launch(job.argv, timeout_s, attempt_dir, timeout_bin, env=env)
        if started is not None:
            started(job.handle)

    while clients.pending:
        if tick is not None:
            tick()
        clients.poll(start_attempt)
        if clients.pending:
            time.sleep(poll_s)


def refused(text, rc, timed_out):
    """Whether a client's run ended because its server does not listen yet (perftest's "Couldn't connect" family,
    no result row): the one failure worth a re-start."""
    if timed_out or rc in (0, None):
        return False
    try:
        parsed = parser.parse(text)
    except ParseError:
        return False
    return not parsed["rows"] and parsed["error_kind"] == "connect"


def ended(handle):
    """The outcome of a detached process once it has ended (``{"rc": None}`` when it was killed from outside and
    left no exit code), or None while it runs."""
    outcome = detached.outcome(handle)
    if outcome is not None:
        return outcome
    if detached.alive(handle) or detached.supervisor_alive(handle):
        # still running, or the tool has just exited and its supervisor is writing the exit
        # code (issue 13: that window was taken as "killed" and ended the retries early)
        return None
    # tool and supervisor gone without an rc file (killed from outside): take what it printed
    return detached.outcome(handle) or {"rc": None}


class _ClientRound(object):
    """The clients of one round still waited for, when each may re-start, and until when a refused one does."""

    def __init__(self, jobs, connect_timeout_s, retry_delay_s, give_up=None, keep_waiting=None, ready=None):
        self.connect_timeout_s = connect_timeout_s
        self.retry_delay_s = retry_delay_s
        self.give_up = give_up
        self.keep_waiting = keep_waiting
        self.ready = ready
        self.deadline = time.monotonic() + connect_timeout_s
        self.pending = list(jobs)
        for job in self.pending:
            job.started = results.utc_now()
            job.started_mono = time.monotonic()
        self.retry_at = dict((id(job), time.monotonic()) for job in self.pending)

    def poll(self, start_attempt):
        """One look at every pending client: start those due, settle those that ended."""
        now = time.monotonic()
        for job in list(self.pending):
            if job.handle is None:
                if now >= self.retry_at[id(job)]:
                    start_attempt(job)
                continue
            outcome = ended(job.handle)
            if outcome is None:
                continue
            text = text_of(job.handle)
            rc = outcome.get("rc")
            timed_out = rc in DETACHED_TIMEOUT_RCS
            if refused(text, rc, timed_out) and self.may_retry():
                self.retry_later(job)
                continue
            job.result = (text, rc, timed_out)
            self.pending.remove(job)

    def may_retry(self):
        """Whether a refused client re-starts: not when its server's host is gone, nor past the deadline (which
        ``keep_waiting`` may push back once more)."""
        if self.give_up is not None and self.give_up():
            return False
        if self.keep_waiting is not None and time.monotonic() + self.retry_delay_s >= self.deadline \
                and self.keep_waiting():
            self.deadline = time.monotonic() + self.connect_timeout_s
        return time.monotonic() + self.retry_delay_s < self.deadline

    def retry_later(self, job):
        job.handle = None
        self.retry_at[id(job)] = time.monotonic() + self.retry_delay_s
        if self.ready is not None and self.ready(self.retry_delay_s):
            self.retry_at[id(job)] = time.monotonic()


def collect(job, wait_s):
    """Wait for a detached server (bounded), kill it if still running. Returns (text, rc, timed_out, killed)."""
    handle = job.handle
    outcome = detached.wait(handle, wait_s)
    killed = False
    if outcome is None:
        killed = detached.kill(handle)
        outcome = detached.outcome(handle) or {"rc": None}
    rc = outcome.get("rc")
    return text_of(handle), rc, rc in DETACHED_TIMEOUT_RCS and not killed, killed
