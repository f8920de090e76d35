# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's adapter: ``OPTIONS``, the rails' plan and argv, ``records(text, ctx)``, ``from_output(path, params, host)``
(see tools/__init__.py).

One side (``ctx.side``: client or server) of one device (``ctx.target``, rail ``ctx.index``) of one test
(``params["test"]``); ``ctx.facts`` are the planner's facts (port rate, GID choice, governor); a client is judged
against ``params["peer_rates_gbit_s"][ctx.index]`` (the server's port rate of that rail). The record is built here
(``side_records``: the outcome of one side, its metrics, facts and series); its built-in expectations are
``default_rules``. ``OPTIONS``: what a run of one test between two hosts takes; those of its options that the perftest
and perftest_sweep modules share are ``TEST_SPEC``'s (with the modules' state, governor and binary path plumbing;
the options that name the state, which the cleanup module takes too, are perftest_state.STATE_SPEC).

The rails, the same on every substrate (the SSH sweep runner, the Kubernetes planner and its pods):

- ``device_plan(devices, params, hcas=None) -> [(index, device, tcp_port, gid_index, facts)]`` - TCP port and GID
  choice per device (``hcas`` from parsers.rdma.build_hcas, or None where sysfs cannot be read) and the GPU of each
  device for GPUDirect (``cuda_facts``);
- ``argvs_for(binary, params, plan, side, peer_address=None, json_dir=None) -> [argv]`` - one argv per device
  (``build_argv``).

Pods import this module (k8s_plan.CODE_MODULES): Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, expectations, imports, results, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest as parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _perftest_options as perftest_options

TESTS = perftest_options.TESTS
ATOMIC_OPERATIONS = perftest_options.ATOMIC_OPERATIONS
# the options the perftest and perftest_sweep modules share, and their ranges (tools/_perftest_options.py)
TEST_SPEC = perftest_options.TEST_SPEC
TEST_RANGES = perftest_options.TEST_RANGES
NAME_RE = re.compile(r"^[A-Za-z0-9_.:\-]+$")
# NGC multinode acceptance criteria for small-message latency (write/send 2.5 us, read 4.5 us).
BW_METRICS = ("bw_avg_gbit_s", "bw_peak_gbit_s", "msg_rate_mpps")
LAT_METRICS = ("lat_min_us", "lat_max_us", "lat_typical_us", "lat_avg_us", "lat_stdev_us", "lat_p99_us", "lat_p999_us")


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
    # the nvidia-smi parser's link order, loaded for use_cuda auto only (every other run of a perftest module skips it)
    from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nvidia_smi  # pylint: disable=import-outside-toplevel
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
        raise AcceptanceError("use_cuda auto is chosen per device (device_plan), not passed to perftest")
    if cuda is not None:
        argv.append("--use_cuda=%s" % cuda)
    if json_file:
        argv += ["--out_json", "--out_json_file=%s" % json_file]
    argv += list(params.get("extra_args") or [])
    if side == "client":
        argv.append(check_peer_address(peer_address))
    return argv


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


# --------------------------------------------------------------------------- options and records

# TEST_SPEC's options that describe the run (its others are the modules' plumbing)
SHARED_OPTIONS = ("ib_port", "gid_index", "size", "all_sizes", "iterations", "duration_s", "qps", "bidirectional",
                  "rdma_cm", "report_gbits", "ignore_cpu_freq", "atomic_operation", "extra_args", "timeout_s", "expect",
                  "line_rate_floor_pct", "tool_dir")
OPTIONS = dict(
    test=dict(type="str", choices=list(TESTS)),
    **perftest_options.RUN_OPTIONS,
    # peer_rate_gbit_s before 2.0.0 (a list, one rate per device of the peer): deprecated
    peer_rates_gbit_s=dict(type="list", elements="float", **argspec.renamed("peer_rate_gbit_s")),
    **dict((name, TEST_SPEC[name]) for name in SHARED_OPTIONS),
)
DEFAULT_TEST = "ib_write_bw"
TOOL = "perftest"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "rdma"
MODULE = "perftest_sweep"
KUBERNETES = ("perftest_sweep",)
# how it runs and what its records come from
ARGV = ("device_plan", "argvs_for", "build_argv")
PARSERS = ("perftest",)
GOLDEN = ("perftest-records", "perftest-import")
DEFAULT_LINE_RATE_PCT = TEST_SPEC["line_rate_floor_pct"]["default"]   # for callers that do not pass it


# --------------------------------------------------------------------------- rails: TCP port, GID, GPU; argv

def device_plan(devices, params, hcas=None):
    """[(index, device, tcp_port, gid_index, facts)] - raises AcceptanceError on a bad device name or GID."""
    plan = []
    for device in devices or []:
        check_name(device, "device")
    cuda = cuda_facts(devices, params)
    for index, device in enumerate(devices or []):
        tcp_port = params["port"] + index
        if tcp_port > 65535:
            raise AcceptanceError("port %d + device index %d is above 65535; lower port" % (params["port"], index))
        facts = {"tcp_port": tcp_port, "ib_port": params["ib_port"]}
        gid_index = params.get("gid_index")
        port = find_port(hcas, device, params["ib_port"])
        if port is not None:
            facts.update({"port_state": port.get("state"), "port_rate_gbit_s": port.get("rate_gbit_s"),
                          "port_rate": port.get("rate"), "link_layer": port.get("link_layer")})
            if gid_index is None:
                gid_index, how = select_gid(port)
                facts["gid_choice"] = how
            else:
                facts["gid_choice"] = "given (gid_index %d)" % gid_index
        else:
            facts["gid_choice"] = ("given (gid_index %d)" % gid_index) if gid_index is not None else \
                "not chosen: %s has no port %d in sysfs (perftest decides)" % (device, params["ib_port"])
        facts["gid_index"] = gid_index
        facts.update(cuda[device])
        plan.append((index, device, tcp_port, gid_index, facts))
    return plan


def argvs_for(binary, params, plan, side, peer_address=None, json_dir=None):
    """One perftest argv per planned device (``json_dir``: ask for --out_json files there)."""
    test = params.get("test") or DEFAULT_TEST
    out = []
    for index, device, tcp_port, gid_index, facts in plan:
        json_file = os.path.join(json_dir, "%s-%s.json" % (side, device)) if json_dir else None
        # the GPU of this device (use_cuda auto is chosen per device by device_plan; None: host memory)
        cuda = facts.get("cuda_device") if "memory" in facts else params.get("use_cuda")
        out.append(build_argv(binary, dict(params, test=test, use_cuda=cuda), device, tcp_port,
                              gid_index, side, peer_address=peer_address, json_file=json_file))
    return out


def rules_params(params, index, test):
    """The params a client of rail ``index`` is judged with: the server's port rate of that rail
    (``peer_rate_gbit_s``, one rate, from the list ``peer_rates_gbit_s``)."""
    rules = dict(params)
    rules.setdefault("line_rate_floor_pct", DEFAULT_LINE_RATE_PCT)
    rates = rules.pop("peer_rates_gbit_s", None) or []
    rules["peer_rate_gbit_s"] = rates[index] if index < len(rates) else (rates[0] if len(rates) == 1 else None)
    rules["test"] = test
    return rules


def records(text, ctx):
    """The record of one side of one device from perftest's text."""
    params = ctx.params
    test = params.get("test") or DEFAULT_TEST
    built = {
        "test": test, "side": ctx.side, "host": ctx.host,
        "peer": ctx.peer or params.get("peer_name") or params.get("peer"), "device": ctx.target,
        "params": rules_params(params, ctx.index, test), "argv": ctx.argv,
        "tool_version": ctx.tool_version, "started": ctx.started, "attempts": ctx.attempts,
        "duration_s": ctx.duration_s, "facts": ctx.facts or {}, "timed_out": ctx.timed_out,
        "timeout_s": params.get("timeout_s"),
    }
    return results.rests_on(side_records(text, ctx.rc, built, reading=ctx.reading))


def from_output(path, params, host):
    """Import mode: the record of a saved output (test and side from the output when the options leave them)."""
    text = imports.read_output(path)
    test = params.get("test")
    side = params.get("side")
    reading = read_output(text)
    if reading.parsed is not None:
        test = reading.parsed.get("tool") or test
        side = side or reading.parsed.get("side")
    else:
        # no table to read (a server that prints none, a cut capture): the title still names the program
        test = parser.tool_named(text) or test
    hcas = params.get("hcas") or [None]
    return imports.bounded(records(text, Context(params=dict(params, test=test or DEFAULT_TEST, timeout_s=None),
                                                 side=side or "client", host=host, target=hcas[0],
                                                 facts={"imported_from": path}, reading=reading)))


# --------------------------------------------------------------------------- one output read once

# perftest's client when getaddrinfo() fails for the server's name (perftest_communication.c, ethernet_client_connect):
# on Kubernetes the server pod's DNS record appears only once that pod runs, so the client may start first
RESOLVE_FAILURE = "Problem in resolving basic address and port"


# One output read once (read_output): parsed, the parser's dict (None when unreadable, or not read: it timed out);
# problem, the ParseError of an unreadable output; retry, a client's run ended only because its server does not answer
Reading = namedtuple("Reading", "parsed problem retry")


def read_output(text, rc=None, timed_out=False):
    """Read one perftest output ONCE: the parse its record is built from (``records`` takes it as ``ctx.reading``)
    and the one retry decision of a client, which the SSH sweep's client round (perftest_clients) and the pod entry
    program (k8s_entry.run_step) both take: a failed run (rc not 0, not timed out) without a result row whose server
    does not answer yet - the parser's ``connect`` failure, or the server's name that does not resolve yet
    (RESOLVE_FAILURE and no other failure: a pod started before the server pod's DNS record). Never raises."""
    if timed_out:
        return Reading(None, None, False)
    failed = rc not in (0, None)
    resolving = RESOLVE_FAILURE in (text or "")
    try:
        parsed = parser.parse(text)
    except ParseError as exc:
        return Reading(None, exc, failed and resolving)
    kind = parsed["error_kind"]
    retry = failed and not parsed["rows"] and (kind == "connect" or (kind in (None, "other") and resolving))
    return Reading(parsed, None, retry)


# --------------------------------------------------------------------------- the record of one side

# The servers that measure nothing, by the title their output prints (the pair's figures are in the client's record):
# read_lat.c and atomic_lat.c: "Only Client post read request" - the server exchanges keys, prints no table, exits 0;
# atomic_bw.c before perftest commit c57509e (2013-10-29, "added bw report to server in write/read/atomic tests",
# so perftest 2.0 and older) - the server prints its header and addresses only.
_SILENT_SERVERS = {
    "ib_read_lat": re.compile(r"^\s*RDMA_Read Latency Test\s*$", re.M),
    "ib_atomic_lat": re.compile(r"^\s*Atomic (FETCH_AND_ADD|CMP_AND_SWAP) Latency Test\s*$", re.M),
    "ib_atomic_bw": re.compile(r"^\s*Atomic (FETCH_AND_ADD|CMP_AND_SWAP) BW Test\s*$", re.M),
}


def side_records(text, rc, fields, reading=None):
    """One record from one perftest output. Never raises on the tool's output.

    ``fields``: test, side (client/server), host, peer, device, params (module params), argv, tool_version,
    started, attempts, duration_s, facts (extra facts: port rate, GID choice, governor), timed_out (bool),
    timeout_s, extra_reason. ``records`` (the entry every caller uses) makes them from a Context. ``reading``: the
    output already read (read_output: the client round's retry decision read it), else it is read here.
    """
    side = _Side(text, rc, fields)
    if fields.get("timed_out"):
        return [side.error(side.timed_out())]
    if reading is None or (reading.parsed is None and reading.problem is None):   # not read, or read as timed out
        reading = read_output(text, rc)
    if reading.problem is not None:
        return [side.unreadable(reading.problem)]
    parsed = reading.parsed
    if not parsed["rows"]:
        return [side.failed(parsed)]
    mismatch = not_what_was_asked(parsed, side.test, fields.get("device")) or other_operation(
        parsed, side.test, (fields.get("params") or {}).get("atomic_operation"))
    if mismatch:
        side.facts.update({"test": parsed.get("test"), "device_reported": parsed["header"].get("Device")})
        return [side.error(mismatch)]
    return [side.measured(parsed)]


class _Side(object):
    """The record of one side being built: its check, the fields every outcome carries, its facts."""

    def __init__(self, text, rc, fields):
        self.text = text
        self.rc = rc
        self.fields = fields
        self.test = fields["test"]
        self.side = fields["side"]
        self.check = "rdma.%s%s" % (self.test, ".server" if self.side == "server" else "")
        self.common = dict(host=fields.get("host"), peer=fields.get("peer"), target=fields.get("device"),
                           tool={"name": "perftest", "version": fields.get("tool_version")},
                           started=fields.get("started"), duration_s=fields.get("duration_s"),
                           params={"argv": fields.get("argv"), "attempts": fields.get("attempts", 1),
                                   "timeout_s": fields.get("timeout_s")})
        sweep = (fields.get("params") or {}).get("sweep_name")
        if sweep:       # which sweep of a run measured it (perftest_sweep: main, confirm); attribution reads it
            self.common["params"]["sweep_name"] = sweep
        self.facts = dict(fields.get("facts") or {})
        self.facts["side"] = self.side

    def error(self, reason, raw=True):
        return results.error(self.check, reason, raw=self.text if raw else None, facts=self.facts, **self.common)

    def skip(self, reason, raw=True):
        return results.skip(self.check, reason, raw=self.text if raw else None, facts=self.facts, **self.common)

    def timed_out(self):
        return "%s %s on %s timed out after %ss and was killed%s" % (
            self.test, self.side, self.fields.get("device"), self.fields.get("timeout_s"),
            " (no client connected?)" if self.side == "server" else " (is the server side running and reachable?)")

    def unreadable(self, exc):
        """The record of an output the parser cannot read."""
        title = _SILENT_SERVERS.get(self.test)
        if self.side == "server" and self.rc in (0, None) and title and title.search(self.text or ""):
            return self.skip("%s's server measures nothing (only the client posts %s; this perftest prints no report "
                             "on the server); the pair's figures are in the client's record" % (
                                 self.test, "reads" if self.test == "ib_read_lat" else "atomics"), raw=False)
        return self.error("could not read %s output (rc %s): %s" % (self.test, self.rc, exc))

    def failed(self, parsed):
        """The record of an output without a result row: no device here (skip), else the tool's failure."""
        message = "; ".join(parsed["errors"][:4])
        if parsed["error_kind"] == "no_device":
            return self.skip("no RDMA device for %s on %s: %s" % (self.test, self.fields.get("device") or "this host",
                                                                  message))
        self.facts["error_kind"] = parsed["error_kind"]
        return self.error("%s %s failed (%s, rc %s): %s" % (self.test, self.side, parsed["error_kind"], self.rc, message))

    def measured(self, parsed):
        """The record of an output with result rows: its metrics judged (client side), what doubts it, what broke."""
        kind = kind_of(self.test)
        metrics = metrics_of(parsed, kind)
        self.facts.update(header_facts(parsed))
        status, reason = warned(parsed, self.fields.get("extra_reason"))
        expect = {}
        if self.side == "client":
            rules = default_rules(self.test, metrics, self.facts, self.fields.get("params") or {})
            try:
                status, reason, expect = expectations.judge(metrics, rules, status, reason)
            except expectations.ExpectationError as exc:
                return self.error("bad expectation: %s" % exc, raw=False)
        problem = incomplete_run(parsed, "%s %s" % (self.test, self.side), self.rc)
        if problem:
            # The run did not end as a complete, valid run: an error whatever the rows say; the rows printed so far
            # are kept (metrics, series).
            if parsed.get("errors_after_rows"):
                self.facts["error_kind"] = parsed.get("error_kind")
            status, reason = "error", problem if not reason else "%s; %s" % (problem, reason)
        record = results.make(self.check, status, reason=reason, metrics=metrics, expect=expect, facts=self.facts,
                              series=_series(parsed, kind), raw=self.text if status != "pass" else None, **self.common)
        return expectations.physical_check(record, raw=self.text)


def header_facts(parsed):
    """The facts of a measured run from perftest's header and tables."""
    header = parsed["header"]
    facts = {
        "test": parsed.get("test"), "tool_unit": parsed.get("unit"),
        "bidirectional": parsed.get("bidirectional"),
        "link_type": header.get("Link type"), "transport": header.get("Transport type"),
        "mtu": header.get("Mtu"), "qps": header.get("Number of qps"),
        "gid_index_used": header.get("GID index"), "connection": header.get("Connection type"),
        "device_reported": header.get("Device"),
    }
    if parsed.get("atomic_operation"):
        facts["atomic_operation"] = parsed["atomic_operation"]     # the atomic tests only (the other records unchanged)
    if parsed["warnings"]:
        facts["tool_warnings"] = parsed["warnings"]
    if parsed["blocks"] > 1:
        facts["tables"] = parsed["blocks"]
    return facts


def warned(parsed, extra_reason):
    """(status, reason) before the expectations: ``warn`` with what casts doubt on the figures, else ``pass``.

    Every warning is kept in facts.tool_warnings; only those that cast doubt on the figures (parser.doubtful_warnings:
    not duration mode's "BW peak", not the CPU-frequency one) warn, with the caller's ``extra_reason``.
    """
    notes = []
    doubtful = parser.doubtful_warnings(parsed)
    if doubtful:
        notes.append("perftest warned: %s" % "; ".join(doubtful))
    if extra_reason:
        notes.append(extra_reason)
    if notes:
        return "warn", "; ".join(notes)
    return "pass", None


def _series(parsed, kind):
    out = []
    unit = parsed.get("unit")
    for row in parsed["rows"]:
        if kind == "bw":
            out.append({
                "msg_size_bytes": row["size_bytes"], "iterations": row["iterations"],
                "bw_peak_gbit_s": _round(parser.gbit_s(row["bw_peak"], unit)),
                "bw_avg_gbit_s": _round(parser.gbit_s(row["bw_avg"], unit)),
                "msg_rate_mpps": row["msg_rate_mpps"],
                "tool_unit": unit, "tool_bw_peak": row["bw_peak"], "tool_bw_avg": row["bw_avg"],
            })
        else:
            out.append({
                "msg_size_bytes": row["size_bytes"], "iterations": row["iterations"],
                "lat_min_us": row["t_min"], "lat_max_us": row["t_max"], "lat_typical_us": row["t_typical"],
                "lat_avg_us": row["t_avg"], "lat_stdev_us": row["t_stdev"], "lat_p99_us": row["p99"],
                "lat_p999_us": row["p999"],
            })
    return out


def _round(value):
    return None if value is None else round(value, 6)


def metrics_of(parsed, kind):
    """Headline metrics: bandwidth at the largest message size; latency at the smallest."""
    rows = parsed["rows"]
    if kind == "bw":
        row = max(rows, key=lambda r: r["size_bytes"])
        unit = parsed.get("unit")
        peak = parser.gbit_s(row["bw_peak"], unit) if parser.peak_measured(parsed) else None
        return {
            "bw_avg_gbit_s": _round(parser.gbit_s(row["bw_avg"], unit)),
            "bw_peak_gbit_s": _round(peak),
            "msg_rate_mpps": row["msg_rate_mpps"],
            "msg_size_bytes": row["size_bytes"],
            "iterations_count": row["iterations"],
        }
    row = min(rows, key=lambda r: r["size_bytes"])
    return {
        "lat_min_us": row["t_min"], "lat_max_us": row["t_max"], "lat_typical_us": row["t_typical"],
        "lat_avg_us": row["t_avg"], "lat_stdev_us": row["t_stdev"], "lat_p99_us": row["p99"],
        "lat_p999_us": row["p999"], "msg_size_bytes": row["size_bytes"], "iterations_count": row["iterations"],
    }


def not_what_was_asked(parsed, test, device):
    """Why the output is not a run of ``test`` on ``device`` (the title and the header's Device as printed), or
    None. What the output does not print (no title, no Device line) is not compared."""
    verb, kind = parsed.get("verb"), parsed.get("kind")
    device_printed = parsed["header"].get("Device")
    asked_verb, asked_kind = verb_of(test), kind_of(test)
    if (verb is None or verb == asked_verb) and (kind is None or kind == asked_kind) \
            and (not device or device_printed is None or device_printed == device):
        return None
    printed = parsed.get("test") or "%s %s" % (verb, kind)
    return ("asked for %s on %s, but the output is of %r on %s: another test's or another device's output, not a "
            "measurement of what was asked" % (test, device or "(any device)", printed,
                                               device_printed or "(device not printed)"))


def other_operation(parsed, test, asked):
    """Why the output of an atomic test is not of the operation asked (``-A``, the title names the one that ran), or
    None; nothing is compared where either is not known (no option given: perftest's default ran)."""
    printed = parsed.get("atomic_operation")
    if verb_of(test) != "atomic" or not asked or not printed or printed == asked:
        return None
    return ("asked for %s with atomic_operation %s, but the output's title names %s: another operation's output, "
            "not a measurement of what was asked" % (test, asked, printed))


def incomplete_run(parsed, what, rc):
    """Why a run that printed result rows is not a complete, valid run (an ``error``), or None: a failure after
    the rows, a table the output stops inside of (no closing line: a killed run, a cut capture), or a non-zero
    exit without a failure line (nccl-tests and HCCL Test records say ``error`` for that too)."""
    rows = len(parsed["rows"])
    broke = parsed.get("errors_after_rows") or []
    if broke:
        return "%s failed after %d result row(s) (rc %s): %s" % (what, rows, rc, "; ".join(broke[:3]))
    if not parsed.get("complete"):
        return "%s output ends inside its table after %d result row(s), without perftest's closing line (rc %s): " \
               "a killed run or a cut capture, not a complete measurement" % (what, rows, rc)
    if rc not in (0, None):
        return "%s exited with rc %s after printing its table, without a failure line: not a complete, valid run" % (
            what, rc)
    return None
