# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Expectations derived from the hardware the probe found: the "hardware" fleet analysis (issue 19).

A collective measured on one node is held to the links its GPUs have, whatever the GPU or rank count and whether
or not a profile names that shape. The link figure comes from the host's own ``gpu.device`` records (the
environment probe): NVLink when every GPU has links (``nvlink_link_count`` x ``nvlink_link_speed_min_gbyte_s``,
per GPU and direction; the lowest GPU of the node), else PCIe (``pcie_link_max_gen`` x ``pcie_link_max_width``,
thresholds.PCIE_LANE_GBYTE_S). nccl-tests' busbw is normalised by the rank count, so one per-GPU figure serves any
rank count: the floor is link figure x the collective's healthy efficiency x the margin (thresholds:
HEALTHY_EFFICIENCY, HARDWARE_MARGIN, PCIE_EFFICIENCY), from runs at sizes >= HARDWARE_MIN_BYTES.

For every measured ``nccl.<collective>`` record with a busbw (2 ranks or more) that no profile or user rule judges
(its ``expect`` has no busbw rule: measured figures beat derived ones) the analysis ADDS one
record ``nccl.<collective>.hardware`` on the same host: ``pass`` or ``fail`` (``warn`` below a PCIe floor: its
efficiency was measured on NVLink GPUs with P2P off, not on a PCIe-only node) with the floor in ``expect`` (its
``source`` is the derivation) and a short reason. Where the hardware cannot judge a record (no probe records of
the host, a multi-node run, sizes below the plateau) no record is added: :func:`not_judged` says why, and the
summary lists the figure as unjudged with that reason (coverage.py). The measured record is never rewritten; the
added record counts toward the host's verdict (verdict.host_records). Being an analysis of the records, it judges
a re-analysed old results.json, import mode and the Kubernetes path the same way.

RDMA (:func:`rdma_analyze`): a measured pairwise bandwidth record (``rdma.<test>``) with no bandwidth rule of its
own (import mode, a Kubernetes run without port facts, an old results.json) is held to the rule the SSH sweep's
module applies (perftest_tool.default_rules) on the active port rates of the ``rdma.port`` records of both ends,
and only there: where a PCIe link of its path is below the lower port rate (an end's HCA link as it can reach,
``pcie_link_effective_max_*``, or as trained; for a GPUDirect pair, ``facts.memory: gpu``, also the GPU's
``gpu.device`` link) the pair is listed unjudged, since no PCIe efficiency is calibrated. A GPUDirect pair whose
PCIe links are not all in the probe records is listed unjudged too. Below the floor, attribution's node/group/link
rule decides whom it blames: ``fail`` on a suspect node; a ``warn`` on the member end of a pair that touches a
group (hosts fine with each other and low with the rest: a switch, its uplink; one finding for the group, naming the
switch where ``net.topology`` records know it); else a ``warn`` on both ends naming the link. Every HCCL figure
no rule judges is listed unjudged (:data:`NPU_UNJUDGED`).

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, attribution, cabling

NAME = "hardware"
SUFFIX = ".hardware"
METRIC = "busbw_max_gbyte_s"
PREFIX = "nccl."
JUDGED = ("pass", "warn", "fail")


def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _nvlink(metrics):
    links = _num(metrics.get("nvlink_link_count")) or _num(metrics.get("nvlink_active_link_count"))
    speed = _num(metrics.get("nvlink_link_speed_min_gbyte_s"))
    return (links, speed) if links and speed else None


def _pcie(metrics):
    gen = _num(metrics.get("pcie_link_max_gen")) or _num(metrics.get("pcie_link_current_gen"))
    width = _num(metrics.get("pcie_link_max_width")) or _num(metrics.get("pcie_link_current_width"))
    lane = thresholds.PCIE_LANE_GBYTE_S.get(int(gen)) if gen else None
    return (int(gen), int(width), lane) if lane and width else None


def link_figures(records):
    """{host: link} from the measured ``gpu.device`` records: the slowest GPU's per-direction figure.

    ``link`` = {"kind": "NVLink" | "PCIe", "gbyte_s": figure, "text": "NVLink 18 x 26.562 GB/s = 478.1 GB/s",
    "gpus": count}. NVLink only when every GPU of the host reports links; PCIe when every GPU reports its link.
    """
    by_host = {}
    for rec in records:
        if rec.get("check") == "gpu.device" and rec.get("host") and not analysis_records.is_analysis_record(rec):
            by_host.setdefault(rec["host"], []).append(rec.get("metrics") or {})
    out = {}
    for host, gpus in by_host.items():
        link = _nvlink_figure(gpus) or _pcie_figure(gpus)
        if link:
            out[host] = dict(link, gpus=len(gpus))
    return out


def _nvlink_figure(gpus):
    found = [_nvlink(m) for m in gpus]
    if not found or not all(found):
        return None
    links, speed = min(found, key=lambda pair: pair[0] * pair[1])
    figure = links * speed
    return {"kind": "NVLink", "gbyte_s": figure, "efficiency_kind": "nvlink",
            "text": "NVLink %d x %s GB/s = %s GB/s" % (links, _fmt(speed), _fmt(round(figure, 1)))}


def _pcie_figure(gpus):
    found = [_pcie(m) for m in gpus]
    if not found or not all(found):
        return None
    gen, width, lane = min(found, key=lambda item: item[1] * item[2])
    figure = width * lane
    return {"kind": "PCIe", "gbyte_s": figure, "efficiency_kind": "pcie",
            "text": "PCIe gen%d x%d = %s GB/s" % (gen, width, _fmt(round(figure, 1)))}


def _fmt(value):
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def efficiency(collective, link):
    """(efficiency, its source) for a collective over this kind of link, or None when none is known."""
    if link["efficiency_kind"] == "pcie":
        return thresholds.PCIE_EFFICIENCY
    return thresholds.HEALTHY_EFFICIENCY.get(collective)


def _nodes(rec):
    facts = rec.get("facts") or {}
    nodes = _num(facts.get("nodes"))
    if nodes is None and isinstance(facts.get("hosts"), list):
        nodes = len(facts["hosts"]) or None
    return nodes or 1


def candidates(records):
    """The measured records this analysis judges: single-host nccl collectives with a busbw over >= 2 ranks."""
    for rec in analysis_records.measured(records):
        check = rec.get("check") or ""
        if not check.startswith(PREFIX):
            continue        # (most records: asked first)
        metrics = rec.get("metrics") or {}
        if (rec.get("peer")
                or not rec.get("host") or rec.get("status") not in JUDGED or _num(metrics.get(METRIC)) is None
                or (_num(metrics.get("ranks")) or 0) < 2 or expectations.is_judging((rec.get("expect") or {}).get(METRIC))):
            continue        # a profile's or the user's rule for the metric wins: measured figures beat derived ones
        yield rec


def judge(rec, link):
    """(status, expect, facts, reason) of one measured record against its host's link (None: cannot judge)."""
    collective = rec["check"][len(PREFIX):]
    metrics = rec.get("metrics") or {}
    if link is None:
        return "skip", None, {}, ("not judged from the hardware: no gpu.device records with NVLink or PCIe "
                                  "figures on the host (run the environment probe in the same run)")
    if _nodes(rec) > 1:
        return "skip", None, {}, "not judged from the hardware: a multi-node run is bounded by the network path"
    size = _num(metrics.get("max_size_bytes"))
    if size is None or size < thresholds.HARDWARE_MIN_BYTES:
        return "skip", None, {}, ("not judged from the hardware: largest size %s B is below %d B (1 GiB), where busbw "
                                  "has not reached its plateau" % (_fmt(size) if size is not None else "unknown",
                                                                   thresholds.HARDWARE_MIN_BYTES))
    known = efficiency(collective, link)
    if known is None:
        return "skip", None, {}, "not judged from the hardware: no healthy efficiency known for %s" % collective
    eff, eff_source = known
    floor = round(link["gbyte_s"] * eff * thresholds.HARDWARE_MARGIN, 1)
    derivation = "%s x %s %% healthy efficiency x %s margin" % (link["text"], _fmt(round(eff * 100, 1)),
                                                                _fmt(thresholds.HARDWARE_MARGIN))
    source = "derived from the probed links: %s; efficiency: %s; margin: %s" % (
        derivation, eff_source, thresholds.HARDWARE_MARGIN_SOURCE)
    value = metrics[METRIC]
    facts = {"measured_check": rec["check"], "link_kind": link["kind"], "link_gbyte_s": round(link["gbyte_s"], 3),
             "link": link["text"], "efficiency": eff, "margin": thresholds.HARDWARE_MARGIN, "derivation": derivation}
    expect = {METRIC: {"min": floor, "source": source}}
    if value < floor:
        reason = "busbw %s GB/s < %s GB/s expected (%s)" % (_fmt(round(value, 1)), _fmt(floor), derivation)
        if link["kind"] == "PCIe":
            # the PCIe efficiency was measured on NVLink GPUs with P2P off, not on a PCIe-only node: a warning
            return "warn", expect, facts, reason + "; PCIe floor not calibrated on PCIe-only GPUs: warn only"
        return "fail", expect, facts, reason
    return "pass", expect, facts, None


def judgements(records):
    """[(measured record, status, expect, facts, reason)] for every candidate; status ``skip``: cannot judge it."""
    links = link_figures(records)
    return [(rec,) + judge(rec, links.get(rec["host"])) for rec in candidates(records)]


def not_judged(records):
    """{(host, check, target): why} of the candidates the hardware cannot judge (coverage lists them): the
    collectives and RDMA pairs it has no figure for, and every HCCL figure (no NPU link rate in the probe)."""
    out = dict(((rec["host"], rec["check"], rec.get("target")), reason)
               for rec, status, _e, _f, reason in judgements(records) + rdma_judgements(records) if status == "skip")
    for rec in npu_candidates(records):
        out[(rec["host"], rec["check"], rec.get("target"))] = NPU_UNJUDGED
    return out


def analyze(records, config):
    """Add a ``<check>.hardware`` record per collective record the hardware judges, and the line-rate judgements of
    the RDMA pairs (:func:`rdma_analyze`); see the module docstring."""
    added, findings = _nccl_analyze(records)
    more, found = rdma_analyze(records, config)
    return added + more, findings + found


def _nccl_analyze(records):
    added, findings = [], []
    for rec, status, expect, facts, reason in judgements(records):
        if status == "skip":
            continue        # no record: coverage.py lists it as unjudged, with this reason (not_judged)
        facts = dict(facts, measured_check=rec["check"])
        added.append(analysis_records.record(
            NAME, rec["check"] + SUFFIX, status, rec["host"], reason=reason, target=rec.get("target"),
            metrics={METRIC: rec["metrics"][METRIC]}, expect=expect, facts=facts))
        if status != "pass":
            findings.append(analysis_records.finding(NAME, rec["check"], [rec["host"]], target=rec.get("target"), evidence={
                METRIC: rec["metrics"][METRIC], "expected_min": expect[METRIC]["min"],
                "derivation": facts["derivation"], "ranks": rec["metrics"].get("ranks"), "status": status}))
    return added, findings


# ---------------------------------------------------------------- RDMA: the line rate of the probed ports

RDMA_PREFIX = "rdma."
RDMA_METRIC = "bw_avg_gbit_s"
PERFTEST_DEFAULT_PORT = 1       # perftest's -i default: the port an imported output was measured on, unless told
GBIT_PER_GBYTE = 8.0
NPU_UNJUDGED = ("not judged from the hardware: no NPU link rate in the probe records (npu-smi and hccn_tool report no "
                "HCCS link rate; the NPU RoCE port speed, hccn_tool -i N -speed -g, is not probed yet and would bound "
                "only multi-node runs); set a profile or acceptance_expect rule")


def port_rates(records):
    """{(host, device, port): active rate in Gbit/s} from the hosts' own ``rdma.port`` records (the probe's sysfs
    read; target ``mlx5_0/1``); a port that is not ACTIVE has no rate to hold a pair to."""
    out = {}
    for rec in records:
        if rec.get("check") != "rdma.port" or analysis_records.is_analysis_record(rec) or not rec.get("host"):
            continue
        device, _sep, port = str(rec.get("target") or "").rpartition("/")
        rate = _num((rec.get("metrics") or {}).get("rate_gbit_s"))
        if device and port.isascii() and port.isdigit() and rate and (rec.get("facts") or {}).get("state") == "ACTIVE":
            out[(rec["host"], device, int(port))] = rate
    return out


def gpu_pcie(records):
    """{(host, GPU index as text): (gen, width, GB/s per direction)} from the ``gpu.device`` records."""
    out = {}
    for rec in records:
        if rec.get("check") == "gpu.device" and rec.get("host") and not analysis_records.is_analysis_record(rec):
            found = _pcie(rec.get("metrics") or {})
            if found:
                out[(rec["host"], str(rec.get("target")))] = (found[0], found[1], found[1] * found[2])
    return out


def rdma_candidates(records):
    """The measured pairwise bandwidth records (client side) that no rule in their own ``expect`` judges."""
    for rec in analysis_records.measured(records):
        check = rec.get("check") or ""
        if not check.startswith(RDMA_PREFIX):
            continue        # (most records: asked first)
        metrics = rec.get("metrics") or {}
        if (check[len(RDMA_PREFIX):] not in perftest_tool.LINE_RATE_TESTS or perftest_tool.kind_of(check) != "bw"
                or not rec.get("host") or not rec.get("peer") or rec.get("peer") == rec.get("host")
                or rec.get("status") not in JUDGED or _num(metrics.get(RDMA_METRIC)) is None
                or expectations.is_judging((rec.get("expect") or {}).get(RDMA_METRIC))):
            continue        # a rule of the run (the sweep's port-rate floor, the user's) wins
        yield rec


def _device_port(rec):
    facts = rec.get("facts") or {}
    port = _num(facts.get("ib_port")) or PERFTEST_DEFAULT_PORT
    return rec.get("target") or facts.get("device_reported"), int(port)


def _hca_capacity(metrics):
    """(gen, width, what) of the most an HCA's PCIe link can carry from its rdma.port metrics: the effective max
    (the lower of the card's and its upstream port's maximum) or, where the link trained higher than that or no
    maximum was read, the link as trained (a degraded link is the probe's warn, not a lower bound here)."""
    found = []
    for when, what in (("effective_max", "reachable"), ("current", "trained")):
        gen, width = _num(metrics.get("pcie_link_%s_gen" % when)), _num(metrics.get("pcie_link_%s_width" % when))
        lane = thresholds.PCIE_LANE_GBYTE_S.get(int(gen)) if gen else None
        if lane and width:
            found.append((width * lane * GBIT_PER_GBYTE, int(gen), int(width), what))
    return max(found, key=lambda f: (f[0], f[3] == "reachable")) if found else None


def hca_links(records):
    """{(host, device): (gen, width, Gbit/s per direction after line encoding, "reachable"|"trained")} of the HCAs'
    PCIe links from the ``rdma.port`` records (:func:`_hca_capacity`)."""
    out = {}
    for rec in records:
        if rec.get("check") != "rdma.port" or analysis_records.is_analysis_record(rec) or not rec.get("host"):
            continue
        device = str(rec.get("target") or "").rpartition("/")[0]
        found = _hca_capacity(rec.get("metrics") or {})
        if device and found:
            out[(rec["host"], device)] = (found[1], found[2], found[0], found[3])
    return out


def _gpudirect_why(rec, pcie, missing):
    """Why a GPUDirect figure is not judged: ``missing`` names the PCIe links of its path the probe records lack
    (an end's HCA link: no pcie_link_* in its rdma.port record; the GPU's: no gpu.device record with one)."""
    gpu = (rec.get("facts") or {}).get("cuda_device")
    known = pcie.get((rec["host"], str(gpu))) if gpu is not None else None
    has = ("; the GPU's is known (GPU %s: PCIe gen%d x%d = %s Gbit/s)" % (
        gpu, known[0], known[1], _fmt(round(known[2] * GBIT_PER_GBYTE, 1))) if known else "")
    return ("not judged from the hardware: a GPUDirect figure (use_cuda) may be bound by the HCAs' or the GPU's PCIe "
            "link below the port rate, and the probe records lack %s%s" % (" and ".join(missing), has))


def _line_rate(rec, rates):
    """(lower rate, where it comes from, local, peer) of a pair, or None when neither end's rate is known."""
    device, port = _device_port(rec)
    local, peer = rates.get((rec["host"], device, port)), rates.get((rec["peer"], device, port))
    if not local and not peer:
        return None
    where = ("the lower active port rate of both ends" if local and peer else
             "the active port rate of %s (%s has no rdma.port record of %s port %d)" % (
                 rec["host"] if local else rec["peer"], rec["peer"] if local else rec["host"], device, port))
    return min(r for r in (local, peer) if r), where, local, peer


def _pcie_bounds(rec, hca, pcie, known):
    """([(Gbit/s, text)] of the PCIe links a pair crosses besides its ports, [missing links]): the HCA link of each
    end with a port rate (``known``) and, for GPUDirect, the GPU the record names (on its own host). A host-memory
    pair's missing HCA link is not listed: the sweep judges it on its port rate alone, and so does this."""
    device, _port = _device_port(rec)
    gpudirect = (rec.get("facts") or {}).get("memory") == "gpu"
    out, missing = [], []
    for end in known:
        link = hca.get((end, device))
        if link:
            out.append((link[2], "the HCA's PCIe link (%s %s, %s gen%d x%d = %s Gbit/s)" % (
                end, device, link[3], link[0], link[1], _fmt(round(link[2], 1)))))
        elif gpudirect:
            missing.append("the HCA PCIe link of %s %s" % (end, device))
    gpu = (rec.get("facts") or {}).get("cuda_device")
    found = pcie.get((rec["host"], str(gpu))) if gpudirect and gpu is not None else None
    if found:
        gbit = found[2] * GBIT_PER_GBYTE
        out.append((gbit, "the GPU's PCIe link (GPU %s of %s, gen%d x%d = %s Gbit/s)" % (
            gpu, rec["host"], found[0], found[1], _fmt(round(gbit, 1)))))
    elif gpudirect:
        missing.append("the PCIe link of GPU %s of %s" % (gpu, rec["host"]))
    return out, missing


def rdma_judge(rec, rates, pcie, hca=None):
    """(status, expect, facts, reason) of one pair against the line rate of its ports (``skip``: cannot judge).

    The floor is perftest_tool.default_rules' (the rule the SSH sweep applies in the module) on the port rates of
    the hosts' own probe records, so an imported, a Kubernetes or a re-analysed pair is held to the same floor. A
    pair whose path a PCIe link binds (an end's HCA link, for GPUDirect the GPU's, below the lower port rate) is
    not judged: no PCIe efficiency is calibrated, so no floor is derived from PCIe figures. A GPUDirect pair whose
    PCIe links are not all in the probe records is not judged either (:func:`_gpudirect_why`)."""
    test = rec["check"][len(RDMA_PREFIX):]
    metrics = rec["metrics"]
    line = _line_rate(rec, rates)
    if line is None:
        device, port = _device_port(rec)
        return "skip", None, {}, ("not judged from the hardware: no active port rate of %s port %d in the rdma.port "
                                  "records of %s or %s (run the environment probe's rdma group in the same run)"
                                  % (device, port, rec["host"], rec["peer"]))
    lower, where, local, peer = line
    known = [h for h, r in ((rec["host"], local), (rec["peer"], peer)) if r]
    bounds, missing = _pcie_bounds(rec, hca or {}, pcie, known)
    if missing:
        return "skip", None, {}, _gpudirect_why(rec, pcie, missing)
    binding = sorted(b for b in bounds if b[0] < lower)
    if binding:
        return "skip", None, {}, ("not judged from the hardware: path bound by %s below the port rate %s Gbit/s (%s): "
                                  "no calibrated PCIe efficiency" % (binding[0][1], _fmt(lower), where))
    argv = (rec.get("params") or {}).get("argv")
    params = {"line_rate_floor_pct": thresholds.RDMA_LINE_RATE_PCT["value"], "peer_rate_gbit_s": peer,
              "duration_s": isinstance(argv, list) and "-D" in argv}
    rule = perftest_tool.default_rules(test, metrics, dict(rec.get("facts") or {}, port_rate_gbit_s=local),
                                       params).get(RDMA_METRIC)
    if not expectations.is_judging(rule):
        return "skip", None, {}, "not judged from the hardware: %s" % ((rule or {}).get("source") or "no floor")
    floor, value = rule["min"], metrics[RDMA_METRIC]
    derivation = "%s %% of %s, %s Gbit/s%s" % (
        _fmt(round(100.0 * floor / lower / (2 if floor > lower else 1), 1)), where, _fmt(lower),
        ", x2 bidirectional" if floor > lower else "")
    facts = {"measured_check": rec["check"], "measured_host": rec["host"], "line_rate_gbit_s": lower,
             "derivation": derivation}
    if bounds:
        facts["pcie_links_not_below_port_rate"] = [text for _gbit, text in bounds]
    expect = {RDMA_METRIC: {"min": floor, "source": "derived from the probed port rates: " + rule["source"]}}
    if value < floor:
        return "fail", expect, facts, "bw %s Gbit/s < %s Gbit/s expected (%s)" % (_fmt(value), _fmt(floor), derivation)
    return "pass", expect, facts, None


def rdma_judgements(records):
    """[(measured record, status, expect, facts, reason)] of every RDMA candidate; ``skip``: cannot judge it."""
    rates, pcie, hca = port_rates(records), gpu_pcie(records), hca_links(records)
    return [(rec,) + rdma_judge(rec, rates, pcie, hca) for rec in rdma_candidates(records)]


def npu_candidates(records):
    """The measured HCCL figures (2 ranks or more) no rule judges: the probe records carry no NPU link rate."""
    for rec in analysis_records.measured(records):
        if not (rec.get("check") or "").startswith("hccl."):
            continue        # (most records: asked first)
        metrics = rec.get("metrics") or {}
        ranks = _num(metrics.get("ranks"))
        if (rec.get("host")
                and rec.get("status") in JUDGED and _num(metrics.get(METRIC)) is not None
                and not (ranks is not None and ranks < 2)
                and not expectations.is_judging((rec.get("expect") or {}).get(METRIC))):
            yield rec


def _matrices(records, judged, config):
    """{(check, target): attribution.Matrix} of the pairwise matrices (two pairs or more), a pair below its derived
    floor counting as a failed pair: attribution tells the node from the link (one rule for both)."""
    derived = dict((id(rec), (status, reason)) for rec, status, _e, _f, reason in judged if status == "fail")
    view = [dict(rec, status="fail", reason=derived[id(rec)][1]) if id(rec) in derived and rec.get("status") != "error"
            else rec for rec in records]
    opts = attribution.settings(config)
    return dict((key, attribution.judge(key[0], key[1], group, opts))
                for key, group in attribution.collect_edges(view, config).items() if len(group["edges"]) >= 2)


def _pair_text(matrix, pair):
    """Why a pair below its floor is put on the link, not on a host."""
    if matrix is None:
        return ("the only pair of its check and rail: node or link cannot be told apart (test each end with other "
                "peers)")
    if dict(matrix.links).get(pair):
        return "both ends are healthy with other peers: the link (cable, port, switch path) is the suspect"
    return "an end has no other good pair: node or link cannot be told apart yet (run the confirmation pass)"


def _group_records(pair, measured, facts, matrix, where):
    """The warns of a pair below its floor that touches a group of attribution (hosts fine with each other and low
    with the rest: a switch, its uplink, the rack): on its member end(s) only, naming the group (and its switch,
    where the topology knows it), with the group's sentence as the finding's text; the other end's pair is explained
    by the group, as a suspect node's peer's is."""
    out = []
    for end in sorted(h for h in pair if h in matrix.group_of):
        members = matrix.group_of[end]
        text = attribution.group_reason(matrix, members, matrix.group_evidence[tuple(members)], where)
        more = dict(facts, attribution="group", group=members[:attribution.MAX_EVIDENCE_PEERS])
        if end in where:
            more.update(switch=where[end].switch, switch_port=where[end].switch_port)
        out.append((end, next(iter(pair - {end})), "warn", "%s; %s" % (measured, text), more, members, text))
    return out


def _rdma_records(rec, judged, matrix, known, where=None):
    """The ``<check>.hardware`` records of one judged pair (``judged``: its (status, facts, reason)) and its
    findings: on the host for a pass; below the floor on the end the fleet's other pairs implicate (attribution's
    suspect node), else on the member end(s) of a group of attribution (:func:`_group_records`; ``where``: the
    switches of the matrix's hosts, {host: cabling.Placement}), else a warn on both ends naming the link; only on
    ends that are hosts of the run (``known``: a peer given as an address gets no record).
    [(host, peer, status, reason, facts, finding hosts or None, finding text)]."""
    status, facts, reason = judged
    if status == "pass":
        return [(rec["host"], rec["peer"], "pass", None, dict(facts, attribution="healthy"), None, None)]
    pair = frozenset((rec["host"], rec["peer"]))
    rail = " on %s" % rec.get("target") if rec.get("target") else ""
    nodes = [h for h in sorted(pair) if matrix is not None and h in matrix.nodes and h in known]
    measured = "%s -> %s%s: %s" % (rec["host"], rec["peer"], rail, reason)     # client -> server: one of 2 directions
    if nodes:
        return [(node, next(iter(pair - {node})), "fail", "%s; %s is the common factor: %d of %d of its pairs are "
                 "low or below their floor" % ((measured, node) + matrix.nodes[node]),
                 dict(facts, attribution="node"), [node], None) for node in nodes]
    if matrix is not None and any(h in matrix.group_of for h in pair):
        return [item for item in _group_records(pair, measured, facts, matrix, where or {}) if item[0] in known]
    a, b = sorted(pair)
    text = "link %s <-> %s, %s; %s" % (a, b, measured, _pair_text(matrix, pair))
    return [(end, other, "warn", text, dict(facts, attribution="link", link=[a, b]), [a, b], None)
            for end, other in ((a, b), (b, a)) if end in known]


def rdma_analyze(records, config):
    """Add ``rdma.<test>.hardware`` records: every measured pair no rule judged, held to the line rate of its ports
    (see :func:`rdma_judge`); below it, attributed like attribution.py attributes (:func:`_rdma_records`)."""
    judged = [j for j in rdma_judgements(records) if j[1] != "skip"]
    if not judged:
        return [], []
    matrices = _matrices(records, judged, config)
    switches = cabling.read(records)
    where = dict((key, cabling.placements(switches, m.incident, key[1])) for key, m in matrices.items())
    known = set(rec.get("host") for rec in analysis_records.measured(records))
    added, findings = [], {}
    for rec, status, expect, facts, reason in judged:
        key = (rec["check"], rec.get("target"))
        for host, peer, verdict, text, more, hosts, summary in _rdma_records(
                rec, (status, facts, reason), matrices.get(key), known, where.get(key)):
            added.append(analysis_records.record(
                NAME, rec["check"] + SUFFIX, verdict, host, reason=text, target=rec.get("target"), peer=peer,
                metrics={RDMA_METRIC: rec["metrics"][RDMA_METRIC]}, expect=expect, facts=more))
            if hosts:
                findings.setdefault((tuple(hosts), rec["check"], rec.get("target")), _rdma_finding(
                    rec, expect, facts, verdict, hosts, summary or text, more.get("attribution")))
    return added, list(findings.values())


def _rdma_finding(rec, expect, facts, verdict, hosts, text, blamed):
    """The finding of the first pair below its floor that names these hosts (a node, a link, a group: one finding
    for all the pairs a group explains, whose text is the group's sentence and the floor's derivation)."""
    evidence = {RDMA_METRIC: rec["metrics"][RDMA_METRIC], "expected_min": expect[RDMA_METRIC]["min"],
                "derivation": facts["derivation"], "status": verdict, "text": text}
    if blamed == "group":
        evidence.update(attribution="group", text="%s; pairs across it are below the floor derived from the probed "
                                                  "port rates (%s)" % (text, facts["derivation"]))
        evidence.pop(RDMA_METRIC)       # one pair's figure would stand for all the pairs the group explains
    return analysis_records.finding(NAME, rec["check"], hosts, target=rec.get("target"), evidence=evidence)
