# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collective benchmark tools' adapters share (private; nccl_tests, hccl, torch_allreduce): the options
of a run and the record of one collective.

- ``OPTIONS`` (the AnsibleModule argument_spec shape) holds what a run takes in both nccl-tests and HCCL Test: the
  collectives and where their binaries are, the sweep's step and iterations, the result check, the reduction, the
  ranks' environment and ranks per host, the launcher's mpirun options (_mpirun.COLLECTIVE_SPEC), the timeout, the
  profile options and ``expect``. Each adapter adds its own (sizes, ...);
- ``to_record()`` turns a parse (parsers/nccl_tests.py, or HCCL Test's in that shape) into one result record,
  applying hardware-profile and user expectations; callers reach it through the tools' adapters
  (tools.nccl_test, tools.hccl_test, tools.allreduce_probe), which turn unreadable output into ``error`` records.

Series rows (one per message size) carry flat keys: size_bytes, count, type,
redop, root, then oop_time_us, oop_algbw_gbyte_s, oop_busbw_gbyte_s, oop_wrong
(out-of-place) and the same with ip_ (in-place). Bandwidths are nccl-tests' GB/s
(1e9 bytes/s); busbw = algbw x the collective's factor (see BUSBW_FACTORS).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, results, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _mpirun

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall",
               "sendrecv", "gather", "scatter", "hypercube", "alltoallv")
# busbw = algbw * factor(n) -- nccl-tests doc/PERFORMANCE.md.
BUSBW_FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1.0) / n,
    "reduce_scatter": lambda n: (n - 1.0) / n,
    "alltoall": lambda n: (n - 1.0) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}


def series_rows(rows):
    out = []
    for row in rows:
        item = {"size_bytes": row.get("size"), "count": row.get("count"), "type": row.get("type"),
                "redop": row.get("redop"), "root": row.get("root")}
        for prefix, placement in (("oop_", "out_of_place"), ("ip_", "in_place")):
            cell = row.get(placement) or {}
            for key in ("time_us", "algbw_gbyte_s", "busbw_gbyte_s", "wrong"):
                item[prefix + key] = cell.get(key)
            for key in ("iter_min_us", "iter_max_us", "iter_p99_us", "iter_cv_pct"):   # '-I 1' runs only
                if key in cell:
                    item[prefix + key] = cell[key]
        out.append(item)
    return out


def _max_with_size(series, key):
    best, at = None, None
    for row in series:
        for prefix in ("oop_", "ip_"):
            value = row.get(prefix + key)
            if value is not None and (best is None or value > best):
                best, at = value, row.get("size_bytes")
    return best, at


def metrics_of(parsed, series):
    busbw_max, size_at = _max_with_size(series, "busbw_gbyte_s")
    algbw_max, _ignored = _max_with_size(series, "algbw_gbyte_s")
    metrics = {
        "busbw_max_gbyte_s": busbw_max,
        "algbw_max_gbyte_s": algbw_max,
        "busbw_avg_gbyte_s": parsed.get("avg_busbw_gbyte_s"),
        "size_at_busbw_max_bytes": size_at,
        "ranks": parsed.get("ranks"),
        "sizes_count": len(series),
    }
    if series:
        last = max(series, key=lambda r: r.get("size_bytes") or 0)
        metrics["max_size_bytes"] = last.get("size_bytes")
        metrics["oop_busbw_at_max_size_gbyte_s"] = last.get("oop_busbw_gbyte_s")
        metrics["ip_busbw_at_max_size_gbyte_s"] = last.get("ip_busbw_gbyte_s")
    wrongs = [row.get(p + "wrong") for row in series for p in ("oop_", "ip_")]
    wrongs = [w for w in wrongs if w is not None]
    if parsed.get("wrong_kind") == "count":
        metrics["wrong_total"] = int(sum(wrongs)) if wrongs else None
    elif parsed.get("wrong_kind") == "max_error":
        metrics["error_max"] = max(wrongs) if wrongs else None
    oob = parsed.get("out_of_bounds")
    if oob:
        metrics["out_of_bounds_total"] = oob.get("count")
    return metrics


def layout_of(parsed):
    if parsed.get("format") == "json":
        return "json"
    if parsed.get("version"):
        return "2.18+"
    if parsed.get("wrong_kind") == "count":
        return "2.11-2.17"
    if parsed.get("wrong_kind") == "max_error":
        return "pre-2.11"
    return "unknown"


def shape_of(parsed, nodes=None, algo=None):
    hosts = sorted(set(d.get("host") for d in parsed.get("devices") or [] if d.get("host")))
    if nodes is None and hosts:
        nodes = len(hosts)
    return {"nodes": nodes, "ranks": parsed.get("ranks"), "algo": algo or None}


def shape_text(shape):
    text = "nodes=%s ranks=%s" % (shape.get("nodes"), shape.get("ranks"))
    if shape.get("algo"):
        text += " algo=%s" % shape["algo"]
    return text


def verdict_from_output(parsed, rc=None, asked=None):
    """(status, reason) decided by the tool's own output, before any expectation.

    ``asked``: the collective that was asked for; an output that names another one (its 'Collective test
    starting:' line, the -J document's argv) is not a measurement of it.
    """
    failures = parsed.get("failures") or []
    warnings = parsed.get("warnings") or []
    if asked and parsed.get("collective") and parsed["collective"] != asked:
        return "error", ("asked for %s, but the output is of %s: another test's output, not a measurement of what "
                         "was asked" % (asked, parsed["collective"]))
    if parsed.get("duplicate_ranks"):
        return "error", ("rank %s listed more than once: the binary was built without MPI=1 but launched by "
                         "mpirun, so every process ran its own 1-rank test (rebuild with MPI=1 or use -g on one node)"
                         % ", ".join(str(r) for r in parsed["duplicate_ranks"]))
    if failures:
        reason = "nccl-tests failed: %s" % failures[0]
        if warnings:
            reason += " (first NCCL WARN: %s)" % warnings[0]
        return "error", reason
    if not parsed.get("rows"):
        why = "no result rows in the output"
        if warnings:
            why += "; first NCCL WARN: %s" % warnings[0]
        return "error", why + " (the run ended before its table: crashed, killed or not started)"
    if parsed.get("layout_assumed"):
        return "error", ("the output has result rows but no column header or parameter lines: a fragment of a run, "
                         "not a whole run (%d rows kept in the series)" % len(parsed["rows"]))
    if not parsed.get("complete"):
        return "error", ("output ended after %d result rows without the 'Avg bus bandwidth' footer "
                         "(crashed, killed or truncated)" % len(parsed["rows"]))
    oob = parsed.get("out_of_bounds") or {}
    wrong = any((row.get(p) or {}).get("wrong") for row in parsed["rows"] for p in ("out_of_place", "in_place"))
    if rc not in (None, 0) and oob.get("ok") is not False and not wrong:
        # (nccl-tests exits non-zero after a failed data check: that run is judged 'fail' below, figures kept)
        return "error", "nccl-tests exited with rc %s although it printed its table" % rc
    return "pass", None


# '-I 1': i_cv% (stdev/mean of the per-iteration times) above thresholds.NCCL_JITTER's cv_warn_pct at sizes of
# its min_size_bytes and more (small sizes are launch-latency bound) warns.


def _jitter_limits():
    return thresholds.NCCL_JITTER["cv_warn_pct"]["value"], thresholds.NCCL_JITTER["min_size_bytes"]["value"]


def jitter_reason(high):
    """The warn reason for the sizes above the jitter limit (``high``, from jitter_of)."""
    limit, smallest = _jitter_limits()
    where = "%d MiB" % (smallest >> 20) if smallest % (1 << 20) == 0 else "%d B" % smallest
    return "high per-iteration jitter (-I 1): i_cv%% above %g %% at %d size(s) of %s or more, first %s" % (
        limit, len(high), where, high[0])


def jitter_of(series):
    """(max i_cv% seen or None, ["<size> B <placement>: i_cv X %, i_p99 Y us", ...] above the warn line)."""
    worst, high = None, []
    limit, smallest = _jitter_limits()
    for row in series:
        for prefix, name in (("oop_", "out-of-place"), ("ip_", "in-place")):
            cv = row.get(prefix + "iter_cv_pct")
            if cv is None:
                continue
            worst = cv if worst is None else max(worst, cv)
            if cv > limit and (row.get("size_bytes") or 0) >= smallest:
                high.append("%s B %s: i_cv %s %%, i_p99 %s us" % (
                    row.get("size_bytes"), name, cv, row.get(prefix + "iter_p99_us")))
    return worst, high


def _facts_of(parsed, series, shape, algo, extra_facts):
    """The record's facts from a parse (None values dropped)."""
    devices = parsed.get("devices") or []
    facts = {
        "collective": parsed.get("collective"),
        "nccl_version": parsed.get("nccl_version"),
        "nccl_tests_version": parsed.get("version"),
        "output_layout": layout_of(parsed),
        "gpu_models": sorted(set(d.get("name") for d in devices if d.get("name"))) or None,
        "hosts": sorted(set(d.get("host") for d in devices if d.get("host"))) or None,
        "nodes": shape.get("nodes"),
        "shape": shape_text(shape),
        "nccl_algo": algo or None,
        "data_type": (series[0].get("type") if series else None),
        "wrong_kind": parsed.get("wrong_kind"),
        "layout_assumed": parsed.get("layout_assumed") or None,
    }
    if parsed.get("warnings"):
        facts["nccl_warnings"] = parsed["warnings"][:5]
    facts.update(extra_facts or {})
    return dict((k, v) for k, v in facts.items() if v is not None)


# the figure a collective's retest keeps from both runs (results.retested): the one fleet_relative judges too
HEADLINE = "busbw_max_gbyte_s"


def retest_worth(record):
    """True for a failing collective record that a transient can explain: its data were right (no wrong element,
    nothing out of bounds), so it failed on its figures. Wrong data never come from a neighbour's job: a second
    run that happens to be clean does not clear them, so they are never retested."""
    metrics = record.get("metrics") or {}
    return (record.get("status") == "fail" and not metrics.get("wrong_total")
            and not metrics.get("out_of_bounds_total"))


def _data_check_verdict(parsed, metrics):
    """('fail', reason) when the data check found wrong elements or out-of-bounds values, else ('pass', None)."""
    status, reason = "pass", None
    wrong_total = metrics.get("wrong_total")
    if wrong_total:
        status, reason = "fail", "%d wrong elements reported by the data check (#wrong): data corruption" % wrong_total
    oob = parsed.get("out_of_bounds")
    if oob and not oob.get("ok"):
        status = "fail"
        reason = "; ".join(r for r in (reason, "Out of bounds values : %s FAILED" % oob.get("count")) if r)
    return status, reason


def _judge_expectations(status, reason, metrics, series, facts, check, shape, rules, profile, profiles):
    """Judge the metrics and per-size series against the profile's and the caller's rules: (status, reason, expect).

    Notes the profile (and a profile without a rule for this check and shape) in ``facts``.
    """
    metric_rules, size_rules, source = expectations.profile_rules(
        profile, check, shape, profiles or {}) if profile else (None, None, None)
    if profile:
        facts["profile"] = profile
        if source is None:
            facts["profile_note"] = "profile %s has no rule for %s at %s" % (profile, check, shape_text(shape))
    merged = expectations.merge_rules(metric_rules, rules)
    status, reason, expect = expectations.judge(metrics, merged, status, reason)
    if size_rules:
        status, reason, size_expect = expectations.judge_sizes(series, size_rules, status, reason)
        expect.update(size_expect)
    return status, reason, expect


def _judge_jitter(status, reason, parsed, series, metrics, facts):
    """Note the worst per-iteration jitter in ``metrics``/``facts``; a pass with high jitter (2+ ranks) warns."""
    worst_cv, high_jitter = jitter_of(series)
    if worst_cv is not None:
        metrics["iter_cv_max_pct"] = worst_cv
    if high_jitter:
        facts["high_jitter"] = high_jitter[:8]
        if status == "pass" and parsed.get("ranks") != 1:
            status, reason = "warn", jitter_reason(high_jitter)
    return status, reason


def to_record(parsed, check=None, host=None, params=None, tool_name="nccl-tests", started=None,
              duration_s=None, raw=None, rc=None, nodes=None, algo=None, rules=None, profile=None,
              profiles=None, extra_facts=None, target=None, asked_collective=None):
    """One result record from a parse. Never raises on tool output problems.

    ``asked_collective``: the collective that was asked for (None: not known, not compared).
    """
    collective = parsed.get("collective")
    check = check or "nccl.%s" % (collective or "unknown")
    series = series_rows(parsed.get("rows") or [])
    metrics = metrics_of(parsed, series)
    shape = shape_of(parsed, nodes=nodes, algo=algo)
    facts = _facts_of(parsed, series, shape, algo, extra_facts)
    status, reason = verdict_from_output(parsed, rc=rc, asked=asked_collective)
    expect = {}
    if status == "pass":
        status, reason = _data_check_verdict(parsed, metrics)
        status, reason, expect = _judge_expectations(status, reason, metrics, series, facts, check, shape,
                                                     rules, profile, profiles)
        status, reason = _judge_jitter(status, reason, parsed, series, metrics, facts)
        if status == "pass" and parsed.get("ranks") == 1:
            # One rank moves nothing between GPUs: nccl-tests' busbw is 0 by definition (or a local copy for
            # broadcast/reduce/sendrecv), and in-place runs are no-ops timed in microseconds. Nothing of the
            # interconnect was measured, so it is not a pass (the figures stay in metrics and series).
            status, reason = "skip", ("1 rank: %s moves no data between GPUs, so no interconnect bandwidth was "
                                      "measured (needs 2 or more GPUs)" % (collective or check))
    tool = {"name": tool_name, "version": parsed.get("version") or None}
    if not tool["version"]:
        tool.pop("version")
    record = results.make(
        check, status, reason=reason, host=host, target=target, metrics=metrics, expect=expect,
        facts=facts, params=params, tool=tool, started=started, duration_s=duration_s,
        raw=raw if status in ("error", "fail") else None, series=series)
    return expectations.physical_check(record, raw=raw)


def merge_text_into_json(parsed_json, parsed_text):
    """Fill what the -J document lacks (tool version, device list, failures) from the text of the same run."""
    merged = dict(parsed_json)
    if parsed_text:
        merged["version"] = parsed_json.get("version") or parsed_text.get("version")
        merged["nccl_version"] = parsed_json.get("nccl_version") or parsed_text.get("nccl_version")
        if parsed_text.get("devices"):
            merged["devices"] = parsed_text["devices"]
            merged["ranks"] = parsed_text.get("ranks") or parsed_json.get("ranks")
        merged["warnings"] = parsed_text.get("warnings") or []
        merged["failures"] = (parsed_json.get("failures") or []) + (parsed_text.get("failures") or [])
        merged["duplicate_ranks"] = parsed_text.get("duplicate_ranks") or []
        merged["collective"] = parsed_json.get("collective") or parsed_text.get("collective")
    return merged


def busbw_factor(collective, ranks):
    """nccl-tests' busbw/algbw factor for ``ranks`` ranks (1.0 when unknown)."""
    func = BUSBW_FACTORS.get(collective)
    if func is None or not ranks:
        return 1.0
    return func(int(ranks))


def flags_argv(binary, opts, flags, what, error=_mpirun.OptionError):
    """``[binary]`` and each ``(option, flag, form)`` of ``flags`` whose value in ``opts`` is not None, in the
    table's order (nccl_tests.FLAGS, hccl.FLAGS); a form is ``size`` (digits with K/M/G), ``int`` (a bool is its 1 or
    0), ``count`` (an integer, 0 left out) or ``name``; ``error`` (naming ``what``, the tool) for a value that cannot
    reach the argv."""
    argv = [binary]
    for key, flag, form in flags:
        value = opts.get(key)
        if value is None or (form == "count" and not value):
            continue
        if form == "size":
            value = str(value)
            if not _mpirun.SIZE_RE.match(value):
                raise error("%s %r is not a size (digits with an optional K, M or G)" % (key, value))
        elif form == "name":
            value = str(value)
            if not _mpirun.NAME_RE.match(value):
                raise error("%s %r has characters %s does not accept" % (key, value, what))
        else:
            value = str(int(value))
        argv += [flag, value]
    return argv


# _mpirun.COLLECTIVE_SPEC's options that describe the run (the others, hosts, run_id and import mode's, are the
# modules' own: collective_module.SPEC)
LAUNCH_OPTIONS = ("iterations", "warmup_iterations", "extra_args", "mpirun", "mpirun_env_forward", "mpirun_extra_args",
                  "tcp_if_include", "timeout_s")

OPTIONS = dict(
    collectives=dict(type="list", elements="str", default=["all_reduce"]),
    tool_dir=dict(type="path"),
    if_missing=dict(type="str", choices=["error", "skip"], default="error"),
    step_factor=dict(type="int", default=2),
    step_bytes=dict(type="int"),
    verify_data=dict(type="bool"),
    datatype=dict(type="str"),
    op=dict(type="str"),
    root=dict(type="int"),
    env=dict(type="dict", default={}),
    ranks_per_node=dict(type="int", default=0),
    **dict((name, _mpirun.COLLECTIVE_SPEC[name]) for name in LAUNCH_OPTIONS),
    **expectations.PROFILE_SPEC,
    expect=dict(type="dict", default={}),
)
