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

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis

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
        if rec.get("check") == "gpu.device" and rec.get("host") and not analysis.is_analysis_record(rec):
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
    for rec in records:
        check = rec.get("check") or ""
        metrics = rec.get("metrics") or {}
        if (analysis.is_analysis_record(rec) or not check.startswith(PREFIX) or rec.get("peer")
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
    """{(host, check, target): why} of the candidates the hardware cannot judge (coverage lists them)."""
    return dict(((rec["host"], rec["check"], rec.get("target")), reason)
                for rec, status, _e, _f, reason in judgements(records) if status == "skip")


def analyze(records, config):
    """Add a ``<check>.hardware`` record per collective record the hardware judges (see the module docstring)."""
    del config
    added, findings = [], []
    for rec, status, expect, facts, reason in judgements(records):
        if status == "skip":
            continue        # no record: coverage.py lists it as unjudged, with this reason (not_judged)
        facts = dict(facts, measured_check=rec["check"])
        added.append(analysis.record(
            NAME, rec["check"] + SUFFIX, status, rec["host"], reason=reason, target=rec.get("target"),
            metrics={METRIC: rec["metrics"][METRIC]}, expect=expect, facts=facts))
        if status != "pass":
            findings.append(analysis.finding(NAME, rec["check"], [rec["host"]], target=rec.get("target"), evidence={
                METRIC: rec["metrics"][METRIC], "expected_min": expect[METRIC]["min"],
                "derivation": facts["derivation"], "ranks": rec["metrics"].get("ranks"), "status": status}))
    return added, findings
