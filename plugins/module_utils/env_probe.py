# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Environment probes: read a node, turn what was read into result records (private).

Everything the probes touch goes through a ``Host`` object (probe_host.Host: files under an optional
root prefix, directory listings, commands with a timeout, PATH lookups, the process
environment, RLIMIT_MEMLOCK), so unit tests run on a fake /sys and /proc tree built
in a temporary directory and on canned command outputs, without Ansible.

``probe(host, params)`` runs the requested groups and returns records; it never
raises for a node's condition: an unreadable output becomes an ``error`` record
(with the raw text), an absent thing a ``skip`` record with the reason.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
import traceback

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, runner, statedir, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.expectations import judge
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import hccn_tool, npu_smi, nvidia_smi, rdma, system
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import is_uint
from ansible_collections.aifabric.acceptance.plugins.module_utils.probe_host import IB_CLASS, read_infiniband

GROUPS = ("env", "gpu", "npu", "rdma", "software")
# Ascend NPUs: npu-smi, and the CANN toolkit's install info under these directories (first found wins)
CANN_DIRS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann/latest")
# hccn_tool (NPU RoCE ports): PATH first, then where the Ascend driver installs it
HCCN_TOOL_PATHS = ("/usr/local/Ascend/driver/tools/hccn_tool",)
DEFAULT_PACKAGES = ("torch", "sglang", "vllm", "deepspeed")
NCCL_WHEELS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
# The interpreter gemm_bench and allreduce_probe run when their `python` option is left at its
# default (`python3`, looked up on PATH with module.get_bin_path): the software probe checks its
# packages too, so "torch is not installed" never sits silently next to a GEMM that ran with torch.
GPU_MODULES_PYTHON = "python3"
MODULES_OF_INTEREST = ("nvidia", "nvidia_peermem", "nv_peer_mem", "mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs",
                       "rdma_ucm", "rdma_cm")
NCCL_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
             "/usr/local/lib", "/usr/local/cuda/lib64", "/usr/local/nccl/lib", "/opt/nccl/lib")
# The HCA's PCI link, read through <hca>/device (the PCI function): drivers/pci/pci-sysfs.c prints the speeds with
# pci_speed_string() ("2.5 GT/s PCIe" ... "64.0 GT/s PCIe", "Unknown"; older kernels printed "8 GT/s" and
# "Unknown speed") and the widths as "%u"; a read may fail with EINVAL (config space unreadable).
PCI_LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
PCIE_GEN_BY_GT_S = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
# The port above the HCA (a root port or a switch's downstream port: the parent directory of the PCI function in
# /sys/devices, as pcie_bandwidth_available() in drivers/pci/pci.c walks up with pci_upstream_bridge()): what the
# link can reach is the lower of both ends' maxima. Only its maxima are read, prefixed "upstream_".
PCI_UPSTREAM_FILES = ("max_link_speed", "max_link_width")
_PCI_FUNCTION_RE = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_PCIE_SPEED_RE = re.compile(r"^([0-9]{1,3}(?:\.[0-9])?) GT/s(?: PCIe)?$")
_PCIE_WIDTH_RE = re.compile(r"^[0-9]{1,2}$")

# Runs in the chosen interpreter(s), never in the module's process: importing torch
# here would load CUDA into Ansible's worker. importlib.metadata needs Python 3.8+.
PYTHON_PROBE = r"""
import json, platform, sys
out = {"python_version": platform.python_version(), "executable": sys.executable,
       "implementation": platform.python_implementation(), "packages": {}, "errors": {}}
args = sys.argv[1:]
want_torch = "--torch-nccl" in args
names = [a for a in args if a != "--torch-nccl"]
try:
    from importlib import metadata as md
except ImportError:
    md = None
    out["errors"]["importlib.metadata"] = "not available in Python %s" % out["python_version"]
for name in names if md else []:
    try:
        out["packages"][name] = md.version(name)
    except md.PackageNotFoundError:
        out["packages"][name] = None
    except Exception as exc:
        out["errors"][name] = repr(exc)[:200]
if want_torch and out["packages"].get("torch"):
    try:
        import torch
        v = torch.cuda.nccl.version()
        if isinstance(v, int):
            v = (v // 10000, v % 10000 // 100, v % 100) if v >= 10000 else (v // 1000, v % 1000 // 100, v % 100)
        out["torch_nccl_version"] = ".".join(str(x) for x in v)
        out["torch_version"] = torch.__version__
        out["torch_cuda_version"] = torch.version.cuda
    except Exception as exc:
        out["errors"]["torch"] = repr(exc)[:300]
print("AIFABRIC_PROBE_JSON:" + json.dumps(out))
"""


def _with_decode_notes(host, records):
    """Records built from what ``host`` read since the last call, each with the decode note (facts.decode_note)."""
    note = host.take_decode_notes()
    if note:
        for record in records:
            record["facts"]["decode_note"] = note
    return records


class _Clock(object):
    def __init__(self):
        self.started = results.utc_now()
        self.t0 = time.monotonic()

    def kw(self):
        return {"started": self.started, "duration_s": time.monotonic() - self.t0}


def _record(check, status, reason=None, clock=None, **kwargs):
    if clock is not None:
        kwargs.update(clock.kw())
    return results.make(check, status, reason=reason, **kwargs)


def _fold(verdicts, status="pass"):
    """[(status, reason)] -> (worst status, '; '-joined reasons of non-pass verdicts)."""
    reasons = [why for st, why in verdicts if st != "pass" and why]
    status = results.worst([status] + [verdict[0] for verdict in verdicts])
    return status, ("; ".join(reasons) or None)


def version_matches(actual, expected):
    """True when ``expected`` equals ``actual`` or is a dotted prefix of it ('2.28' ~ '2.28.9')."""
    if actual is None or expected is None:
        return False
    actual, expected = str(actual).strip(), str(expected).strip()
    return actual == expected or actual.startswith(expected + ".") or actual.startswith(expected + "+")


def _version_key(text):
    """'2.28.9' -> (2, 28, 9) for ordering (non-numeric parts sort first)."""
    return tuple(int(part) if is_uint(part) else -1 for part in re.split(r"[.+\-]", str(text)))


def _expect_version(name, actual, expected, verdicts, expect, label=None):
    """Dotted-prefix version rule: ``expect[name] = {version: expected}``; ``label`` names it in reasons."""
    if expected in (None, ""):
        return
    label = label or name
    expect[name] = {"version": str(expected)}
    if actual is None:
        verdicts.append(("error", "%s was not found, so the expected %s cannot be checked" % (label, expected)))
    elif not version_matches(actual, expected):
        verdicts.append(("fail", "%s is %s, expected %s" % (label, actual, expected)))


def _expect_count(metrics, name, wanted, verdicts, expect):
    """Count rule: ``metrics[name]`` equals ``wanted`` (None: no rule); the rule goes to ``expect``, a miss to
    ``verdicts``."""
    if wanted is None:
        return
    status, reason, rules = judge(metrics, {name: {"equals": wanted}})
    expect.update(rules)
    if status != "pass":
        verdicts.append((status, reason))


def expectation(params, name):
    """The expectation ``name`` of the probe's ``expect`` mapping (None: not expected)."""
    return (params.get("expect") or {}).get(name)


def _error_from(check, exc, clock, target=None, raw=None, **kwargs):
    details = getattr(exc, "details", {}) or {}
    raw = raw or details.get("stdout_tail") or details.get("stderr_tail") or details.get("line")
    params = {"argv": details.get("cmd")} if details.get("cmd") else {}
    return _record(check, "error", str(exc), clock=clock, target=target, raw=raw, params=params, **kwargs)


# =========================================================================== env


def probe_env(host, params):
    out = []
    for check, func in (("env.os", _env_os), ("env.cpu", _env_cpu), ("env.cpu_governor", _env_governor),
                        ("env.memory", _env_memory), ("env.numa", _env_numa), ("env.memlock", _env_memlock),
                        ("env.iommu", _env_iommu), ("env.hugepages", _env_hugepages),
                        ("env.kernel_modules", _env_kernel_modules), ("env.env_vars", _env_vars)):
        clock = _Clock()
        try:
            records = func(host, params, clock)
        except _Unreadable as exc:
            records = [_record(check, "skip", str(exc), clock=clock)]
        except (ParseError, AcceptanceError) as exc:
            records = [_error_from(check, exc, clock)]
        out.extend(_with_decode_notes(host, records))
    return out


class _Unreadable(Exception):
    """A file an env check needs is not readable: probe_env turns it into the check's skip record."""


def _read_required(host, path):
    """The text of ``path``; raises _Unreadable ('<path> is not readable') when it cannot be read."""
    text = host.read(path)
    if text is None:
        raise _Unreadable("%s is not readable" % path)
    return text


def _env_os(host, params, clock):
    text = host.read("/etc/os-release") or host.read("/usr/lib/os-release")
    osr = system.parse_os_release(text) if text else {}
    uname = os.uname() if not host.root else None
    facts = {
        "os_id": osr.get("ID"), "os_version": osr.get("VERSION_ID"), "os_pretty_name": osr.get("PRETTY_NAME"),
        # kernel_version is the release (uname -r), the string fleets compare; kernel_build is uname -v
        "kernel_version": (host.read("/proc/sys/kernel/osrelease") or "").strip() or (uname[2] if uname else None),
        "kernel_build": (host.read("/proc/sys/kernel/version") or "").strip() or (uname[3] if uname else None),
        "arch": uname[4] if uname else None,
    }
    if not text:
        return [_record("env.os", "warn", "no /etc/os-release on this node", clock=clock, facts=facts)]
    return [_record("env.os", "pass", clock=clock, facts=facts)]


def _env_cpu(host, params, clock):
    cpu = system.parse_cpuinfo(_read_required(host, "/proc/cpuinfo"))
    online = host.read("/sys/devices/system/cpu/online")
    metrics = {"cpu_logical_count": cpu["logical_cpus"], "cpu_socket_count": cpu["sockets"],
               "cpu_cores_per_socket_count": cpu["cores_per_socket"]}
    if online:
        metrics["cpu_online_count"] = system.parse_cpulist(online)
    facts = {"cpu_model": cpu["model"], "cpu_vendor": cpu["vendor"], "virtualized": cpu["hypervisor"]}
    return [_record("env.cpu", "pass", clock=clock, metrics=metrics, facts=facts)]


def _env_governor(host, params, clock):
    cpus = host.listdir("/sys/devices/system/cpu") or []
    values = []
    for name in cpus:
        if re.match(r"^cpu\d+$", name):
            value = host.read("/sys/devices/system/cpu/%s/cpufreq/scaling_governor" % name)
            if value is not None:
                values.append(value)
    expected = expectation(params, "governor")
    if not values:
        reason = "no cpufreq scaling_governor in sysfs (virtual machine, or no cpufreq driver)"
        if expected:
            reason += "; expect.governor %s cannot be checked" % expected
        return [_record("env.cpu_governor", "skip", reason, clock=clock)]
    governor, counts = system.summarize_values(values)
    facts = {"cpu_governor": governor, "cpu_governor_counts": counts}
    verdicts, expect = [], {}
    if expected:
        expect["cpu_governor"] = {"equals": expected}
        if governor != expected:
            verdicts.append(("fail", "CPU frequency governor is %s (%s), expected %s" % (
                governor, ", ".join("%s x%d" % kv for kv in sorted(counts.items())), expected)))
    status, reason = _fold(verdicts)
    return [_record("env.cpu_governor", status, reason, clock=clock, facts=facts, expect=expect,
                    metrics={"cpu_with_governor_count": len(values)})]


def _env_memory(host, params, clock):
    mem = system.parse_meminfo(_read_required(host, "/proc/meminfo"))
    metrics = {"mem_total_bytes": mem.get("MemTotal"), "mem_available_bytes": mem.get("MemAvailable"),
               "swap_total_bytes": mem.get("SwapTotal")}
    return [_record("env.memory", "pass", clock=clock, metrics=metrics)]


def _env_numa(host, params, clock):
    names = host.listdir("/sys/devices/system/node")
    nodes = [n for n in (names or []) if re.match(r"^node\d+$", n)]
    if not nodes:
        return [_record("env.numa", "skip", "no /sys/devices/system/node/node* (kernel without NUMA)", clock=clock)]
    cpulists, mem = {}, {}
    for node in sorted(nodes, key=lambda n: int(n[4:])):
        cpulist = (host.read("/sys/devices/system/node/%s/cpulist" % node) or "").strip()
        cpulists[node] = cpulist
        meminfo = host.read("/sys/devices/system/node/%s/meminfo" % node) or ""
        match = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
        if match:
            mem[node] = int(match.group(1)) * 1024
    metrics = {"numa_node_count": len(nodes),
               "numa_nodes_with_cpus_count": sum(1 for v in cpulists.values() if system.parse_cpulist(v) > 0)}
    return [_record("env.numa", "pass", clock=clock, metrics=metrics,
                    facts={"numa_cpulists": cpulists, "numa_mem_total_bytes": mem})]


def _env_memlock(host, params, clock):
    soft, hard = host.memlock()
    facts = {"memlock_soft": "unlimited" if soft < 0 else str(soft),
             "memlock_hard": "unlimited" if hard < 0 else str(hard)}
    metrics = {}
    if soft >= 0:
        metrics["memlock_soft_bytes"] = soft
    if hard >= 0:
        metrics["memlock_hard_bytes"] = hard
    verdicts, expect = [], {}
    if expectation(params, "memlock_unlimited"):
        expect["memlock_soft"] = {"equals": "unlimited"}
        if soft >= 0:
            verdicts.append(("fail", "ulimit -l (RLIMIT_MEMLOCK) is %d KiB, expected unlimited for RDMA memory "
                                     "registration" % (soft // 1024)))
    status, reason = _fold(verdicts)
    return [_record("env.memlock", status, reason, clock=clock, facts=facts, metrics=metrics, expect=expect,
                    params={"scope": "the module's own process (the Ansible connection's session limits)"})]


def _env_iommu(host, params, clock):
    cmdline = host.read("/proc/cmdline")
    hints = system.parse_cmdline(cmdline) if cmdline is not None else None
    groups = host.listdir("/sys/kernel/iommu_groups")
    types = []
    for group in (groups or [])[:64]:
        value = host.read("/sys/kernel/iommu_groups/%s/type" % group)
        if value is not None:
            types.append(value)
    domain, _counts = system.summarize_values(types)
    facts = {
        "iommu_cmdline": hints["params"] if hints else None,
        "iommu_default_domain": domain,
        "iommu_passthrough_cmdline": hints["iommu_passthrough"] if hints else None,
        "acs_override": hints["acs_override"] if hints else None,
        "acs_config": hints["acs_config"] if hints else None,
        "pci_options": hints["pci_options"] if hints else None,
    }
    metrics = {"iommu_group_count": len(groups) if groups is not None else 0}
    verdicts = []
    translated = domain is not None and domain.startswith("DMA")
    if translated:
        verdicts.append(("warn", "IOMMU translates DMA (default domain %s): GPUDirect RDMA/P2P traffic pays for "
                                 "IOMMU translation; NVIDIA recommends iommu=pt (passthrough) or the IOMMU off"
                                 % domain))
    elif domain is None and groups and hints and hints["iommu_requested"] and not hints["iommu_passthrough"]:
        verdicts.append(("warn", "IOMMU is on (%d groups) without iommu=pt on the kernel command line"
                                 % len(groups)))
    status, reason = _fold(verdicts)
    if cmdline is None and groups is None:
        return [_record("env.iommu", "skip", "neither /proc/cmdline nor /sys/kernel/iommu_groups is readable",
                        clock=clock)]
    return [_record("env.iommu", status, reason, clock=clock, facts=facts, metrics=metrics)]


def _env_hugepages(host, params, clock):
    mem = system.parse_meminfo(_read_required(host, "/proc/meminfo"))
    thp = host.read("/sys/kernel/mm/transparent_hugepage/enabled")
    metrics = {"hugepages_total_count": mem.get("HugePages_Total"), "hugepages_free_count": mem.get("HugePages_Free"),
               "hugepage_size_bytes": mem.get("Hugepagesize")}
    sizes = [n for n in (host.listdir("/sys/kernel/mm/hugepages") or []) if n.startswith("hugepages-")]
    facts = {"transparent_hugepage": system.parse_selected(thp) if thp else None,
             "hugepage_sizes": [s[len("hugepages-"):] for s in sizes]}
    return [_record("env.hugepages", "pass", clock=clock, metrics=metrics, facts=facts)]


def _env_kernel_modules(host, params, clock):
    text = host.read("/proc/modules")
    wanted = list(MODULES_OF_INTEREST)
    for name in expectation(params, "kernel_modules") or []:
        if name not in wanted:
            wanted.append(name)
    if text is None:
        reason = "/proc/modules is absent (kernel built without loadable modules, or a sandbox)"
        if expectation(params, "kernel_modules"):
            reason += "; expect.kernel_modules cannot be checked"
        return [_record("env.kernel_modules", "skip", reason, clock=clock)]
    loaded = system.parse_modules(text)
    state = {}
    for name in wanted:
        if name in loaded:
            state[name] = "loaded"
        elif host.exists("/sys/module/%s" % name):
            state[name] = "builtin"
        else:
            state[name] = "absent"
    verdicts, expect = [], {}
    missing = [n for n in (expectation(params, "kernel_modules") or []) if state.get(n) == "absent"]
    if expectation(params, "kernel_modules"):
        expect["kernel_modules"] = {"present": list(expectation(params, "kernel_modules"))}
    if missing:
        verdicts.append(("fail", "kernel module(s) not loaded: %s" % ", ".join(missing)))
    hcas = host.listdir(IB_CLASS)
    if state.get("nvidia") != "absent" and hcas \
            and state.get("nvidia_peermem") == "absent" and state.get("nv_peer_mem") == "absent":
        verdicts.append(("warn", "the nvidia driver and RDMA devices are present but neither nvidia_peermem nor "
                                 "nv_peer_mem is loaded: "
                                 "GPUDirect RDMA through peer memory is unavailable (NCCL can still use dma-buf "
                                 "on kernel >= 5.12 with the open GPU kernel modules, else it stages through host memory)"))
    status, reason = _fold(verdicts)
    return [_record("env.kernel_modules", status, reason, clock=clock, expect=expect,
                    facts={"kernel_modules": state},
                    metrics={"kernel_modules_loaded_count": len(loaded)})]


def _env_vars(host, params, clock):
    patterns = params.get("env_vars") or []
    if not patterns:
        return []
    found = {}
    for name in host.env_names():
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            found[name] = host.getenv(name)
    return [_record("env.env_vars", "pass", clock=clock, facts={"env": found},
                    params={"patterns": list(patterns),
                            "scope": "environment of the module's process (the Ansible connection's session)"})]


# =========================================================================== software


def _interpreters(host, params):
    """[(path, role)]: the module's own interpreter, the ``python`` option's, and the one the GPU
    modules run by default (``python3`` on PATH) when it is a different interpreter."""
    out = []
    seen = set()

    def add(path, role):
        key = host.realpath(path) or path
        if path and key not in seen:
            seen.add(key)
            out.append((path, role))

    add(host.executable, "the module's interpreter")
    for path in params.get("pythons") or []:
        add(path, "set in the python option")
    gpu = host.which(GPU_MODULES_PYTHON)
    if gpu:
        add(gpu, "python3 on PATH, what gemm_bench and allreduce_probe run by default")
    return out


def probe_software(host, params):
    out = []
    interpreters = _interpreters(host, params)
    packages = list(DEFAULT_PACKAGES)
    for name in params.get("packages") or []:
        if name not in packages:
            packages.append(name)
    for name in (expectation(params, "package_versions") or {}):
        if name not in packages:
            packages.append(name)
    pythons = []
    probed = []
    for python, role in interpreters:
        clock = _Clock()
        argv = runner.python_argv(python, ["-c", PYTHON_PROBE] + packages + list(NCCL_WHEELS) + ["--torch-nccl"])
        try:
            run = host.run(argv, params.get("timeout_s", 60))
            if run.rc != 0:
                raise AcceptanceError("python probe with %s exited %d" % (python, run.rc),
                                      stderr_tail=results.trim(run.output))
            data = system.parse_probe(run.stdout)
        except (AcceptanceError, ParseError) as exc:
            out.append(_error_from("env.python", exc, clock, target=python))
            continue
        pythons.append((python, data))
        probed.append((python, role, data, clock))
        facts = {"python_version": data["python_version"], "python_executable": data.get("executable"),
                 "python_implementation": data.get("implementation"), "python_role": role}
        verdicts = [("warn", "%s: %s" % (k, v)) for k, v in sorted((data.get("errors") or {}).items())
                    if k != "torch"]
        status, reason = _fold(verdicts)
        out.append(_record("env.python", status, reason, clock=clock, target=python, facts=facts,
                           params={"argv": runner.python_argv(python, ["-c", "<probe>"] + packages)}))
    for python, role, data, clock in probed:
        others = [(p, r, d) for p, r, d, _c in probed if p != python]
        out.extend(_package_records(params, python, role, packages, data, clock, others))
    out.extend(_nccl_records(host, params, pythons))
    if params.get("pip_freeze"):
        for python, _data in pythons:
            out.append(_pip_freeze(host, params, python))
    return out


def _elsewhere(name, others):
    """' (it is installed for <python> (<role>): <version>)' when another probed interpreter has it."""
    found = ["%s (%s): %s" % (python, role, data["packages"].get(name)) for python, role, data in others
             if data["packages"].get(name)]
    return "; it is installed for %s" % ", ".join(found) if found else ""


def _package_records(params, python, role, packages, data, clock, others=()):
    out = []
    expected = expectation(params, "package_versions") or {}
    user = set(params.get("packages") or []) | set(expected)
    unreadable = (data.get("errors") or {}).get("importlib.metadata")
    for name in packages:
        version = data["packages"].get(name)
        # one form for every interpreter's packages (env.python's target, then the package): a host probes several
        target = "%s:%s" % (python, name)
        facts = {"version": version, "package": name, "python": python, "python_role": role}
        installed_elsewhere = dict((p, d["packages"].get(name)) for p, _r, d in others if d["packages"].get(name))
        if installed_elsewhere:
            facts["installed_for"] = installed_elsewhere
        if unreadable:
            out.append(_record("env.package", "error", "%s version cannot be read: importlib.metadata is %s "
                               "(needs Python 3.8+)" % (name, unreadable), clock=clock, target=target, facts=facts))
            continue
        if name in (data.get("errors") or {}):
            out.append(_record("env.package", "error", "%s version could not be read: %s" % (
                name, data["errors"][name]), clock=clock, target=target, facts=facts))
            continue
        verdicts, expect = [], {}
        missing = "%s is not installed for %s (%s)%s" % (name, python, role, _elsewhere(name, others))
        if name in expected:
            wanted = expected[name]
            wanted = None if wanted is None else str(wanted).strip()
            _expect_version("version", version, wanted or None, verdicts, expect, label="%s version" % name)
            if not wanted:
                expect["version"] = {"present": True}
                if version is None:
                    verdicts.append(("fail", missing))
        if version is None and not verdicts:
            out.append(_record("env.package", "skip", missing + ("" if name in user else " (default package list)"),
                               clock=clock, target=target, facts=facts))
            continue
        status, reason = _fold(verdicts)
        if status == "error":
            status = "fail"
        out.append(_record("env.package", status, reason, clock=clock, target=target, facts=facts, expect=expect))
    return out


def _nccl_on_disk(host, params):
    """({real path: version or None}, the real path of the loader's libnccl.so.2 or None).

    Sources: ``ldconfig -p`` and a listing of the usual library directories; symlinks are
    resolved so /lib and /usr/lib (merged /usr) or libnccl.so -> .so.2 -> .so.2.x.y count once.
    """
    found = {}
    picked = None
    ldconfig = host.which("ldconfig")
    for path in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
        if not ldconfig and host.exists(path):
            ldconfig = path
    candidates = []
    if ldconfig:
        run = host.run([ldconfig, "-p"], params.get("timeout_s", 60))
        if run.rc == 0:
            for lib in system.parse_ldconfig(run.stdout):
                candidates.append(lib["path"])
                if lib["name"] == "libnccl.so.2" and picked is None:
                    picked = host.realpath(lib["path"]) or lib["path"]
    for directory in NCCL_DIRS:
        for name in host.listdir(directory) or []:
            if name.startswith("libnccl.so"):
                candidates.append(directory + "/" + name)
    for path in candidates:
        real = host.realpath(path)
        if real and real not in found:
            found[real] = system.nccl_version_from_filename(os.path.basename(real))
    return found, picked


def _nccl_records(host, params, pythons):
    out = []
    expected = expectation(params, "nccl_version")
    clock = _Clock()
    try:
        libs, picked = _nccl_on_disk(host, params)
    except (AcceptanceError, ParseError) as exc:
        out.append(_error_from("env.nccl", exc, clock, target="system"))
        libs, picked = None, None
    if libs is not None:
        versions = sorted(set(v for v in libs.values() if v))
        version = libs.get(picked) if picked else (versions[-1] if len(versions) == 1 else None)
        facts = {"nccl_version": version, "nccl_libraries": libs, "nccl_loader_path": picked}
        if not libs:
            out.append(_record("env.nccl", "skip", "no libnccl.so* known to ldconfig or in %s" % ", ".join(NCCL_DIRS),
                               clock=clock, target="system", facts=facts))
        else:
            verdicts, expect = [], {}
            if version is None:
                verdicts.append(("warn", "libnccl found (%s) but no file name carries its version%s" % (
                    ", ".join(sorted(libs)), "; several versions on disk: %s" % ", ".join(versions)
                    if len(versions) > 1 else "")))
            _expect_version("nccl_version", version, expected, verdicts, expect)
            status, reason = _fold(verdicts)
            out.append(_record("env.nccl", status, reason, clock=clock, target="system", facts=facts, expect=expect,
                               tool={"name": "nccl", "version": version} if version else None))
    for python, data in pythons:
        clock = _Clock()
        target = "python:%s" % python       # one form for every probed interpreter (was "python" for the first)
        wheels = dict((n, data["packages"].get(n)) for n in NCCL_WHEELS if data["packages"].get(n))
        version, source = data.get("torch_nccl_version"), "torch.cuda.nccl.version()"
        if not version and wheels:
            version, source = sorted(wheels.values(), key=_version_key)[-1], "nvidia-nccl wheel"
        facts = {"nccl_version": version, "nccl_source": source if version else None, "nccl_wheels": wheels,
                 "torch_version": data.get("torch_version"), "torch_cuda_version": data.get("torch_cuda_version"),
                 "python": python}
        if not version:
            why = "no NCCL in %s's packages (no torch with NCCL, no nvidia-nccl wheel)" % python
            if (data.get("errors") or {}).get("importlib.metadata"):
                why = "%s's packages cannot be read: importlib.metadata is %s" % (
                    python, data["errors"]["importlib.metadata"])
            elif (data.get("errors") or {}).get("torch"):
                why = "torch is installed but its NCCL version could not be read: %s" % data["errors"]["torch"]
            out.append(_record("env.nccl", "skip", why, clock=clock, target=target, facts=facts))
            continue
        verdicts, expect = [], {}
        _expect_version("nccl_version", version, expected, verdicts, expect)
        status, reason = _fold(verdicts)
        out.append(_record("env.nccl", status, reason, clock=clock, target=target, facts=facts, expect=expect,
                           tool={"name": "nccl", "version": version}))
    return out


def _pip_freeze(host, params, python):
    clock = _Clock()
    argv = runner.python_argv(python, ["-m", "pip", "freeze", "--all"])
    try:
        run = host.run(argv, params.get("timeout_s", 60))
    except AcceptanceError as exc:
        return _error_from("env.pip_freeze", exc, clock, target=python)
    if run.rc != 0:
        if "No module named pip" in run.output:
            return _record("env.pip_freeze", "skip", "pip is not installed for %s" % python, clock=clock,
                           target=python, params={"argv": argv})
        return _record("env.pip_freeze", "error", "pip freeze with %s exited %d" % (python, run.rc), clock=clock,
                       target=python, raw=run.output, params={"argv": argv})
    try:
        lines, digest = system.parse_pip_freeze(run.stdout)
    except ParseError as exc:
        return _error_from("env.pip_freeze", exc, clock, target=python, raw=run.output)
    return _record("env.pip_freeze", "pass", clock=clock, target=python, params={"argv": argv},
                   facts={"pip_freeze_sha256": digest}, metrics={"package_count": len(lines)})


# =========================================================================== gpu


def probe_gpu(host, params):
    clock = _Clock()
    explicit = params.get("nvidia_smi_path")
    if explicit and not host.exists(explicit):
        return [_record("gpu.inventory", "error", "nvidia-smi not found at %s (nvidia_smi_path)" % explicit,
                        clock=clock, tool={"name": "nvidia-smi"})]
    smi = explicit or host.which("nvidia-smi")
    pci = pci_functions(host, NVIDIA_GPUS)
    if not smi:
        if pci:
            return [_unseen_gpus(pci, "nvidia-smi not found on PATH: install the NVIDIA driver utilities or set "
                                      "nvidia_smi_path", clock)]
        return [_absent_gpus(params, "no NVIDIA GPU/driver: nvidia-smi not found", clock)]
    timeout = params.get("timeout_s", 60)
    try:
        data, source, _run = _gpu_query(host, smi, timeout)
    except _NoGpu as exc:
        if pci:
            return [_unseen_gpus(pci, str(exc), clock, raw=exc.raw)]
        return [_absent_gpus(params, str(exc), clock, raw=exc.raw)]
    except (AcceptanceError, ParseError) as exc:
        if pci is not None and not pci:
            # e.g. "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" on a
            # CPU node built from the GPU image: no NVIDIA display/3D controller on the PCI bus.
            return [_absent_gpus(params, "no NVIDIA GPU on the PCI bus (nvidia-smi is installed but failed: %s)"
                                 % str(exc)[:200], clock, raw=getattr(exc, "details", {}).get("stdout_tail"))]
        return [_error_from("gpu.inventory", exc, clock, tool={"name": "nvidia-smi"})]
    tool = {"name": "nvidia-smi", "version": data.get("driver_version")}
    out = [_gpu_inventory(params, data, source, clock, tool, pci)]
    nvlink, nvlink_error = _gpu_nvlink(host, smi, timeout, data)
    for gpu in data["gpus"]:
        gpu = dict(gpu, nvlink=nvlink.get(gpu["index"]))
        out.append(_gpu_device(params, gpu, _Clock(), tool, source))
    out.extend(_gpu_topology(host, smi, params, data, tool, nvlink_error))
    return out


def _gpu_nvlink(host, smi, timeout, data):
    """({GPU index: nvlink_status entry}, None) or ({}, (message, raw)) when it cannot be read.

    Entries are matched to GPUs by UUID when both sides have one, else by index.
    """
    argv = [smi, "nvlink", "-s"]
    try:
        run = host.run(argv, timeout)
        if run.rc != 0:
            return {}, ("nvidia-smi nvlink -s exited %d" % run.rc, run.output)
        status = nvidia_smi.parse_nvlink_status(run.stdout)
    except (AcceptanceError, ParseError) as exc:
        return {}, (str(exc), getattr(exc, "details", {}).get("stdout_tail"))
    by_uuid = dict((entry["uuid"], entry) for entry in status.values() if entry["uuid"])
    out = {}
    for gpu in data["gpus"]:
        entry = by_uuid.get(gpu["uuid"]) if gpu["uuid"] and by_uuid else status.get(gpu["index"])
        if entry is not None:
            out[gpu["index"]] = entry
    return out, None


# Hardware the probes look for on the PCI bus: (what, vendor, class prefixes, device id prefixes or None).
# Present there but not seen by its tool is an error, never a skip (docs/env_probe.md, "Present but not seen").
NVIDIA_GPUS = ("NVIDIA GPU", "0x10de", ("0x03",), None)    # display/3D controllers; NVSwitch (0x0680) is no GPU
RDMA_NICS = ("Mellanox/NVIDIA network function", "0x15b3", ("0x02",), None)   # InfiniBand 0x0207, Ethernet 0x0200
# Ascend devices are 19e5:dxxx (910B d802, lspci "Processing accelerators"); the Kunpeng KAE engines share the
# vendor and the class (ZIP engine 19e5:a250) and are no NPUs
ASCEND_NPUS = ("Huawei Ascend NPU", "0x19e5", ("0x12",), ("0xd",))
PCI_DEVICES = "/sys/bus/pci/devices"
PCI_CLASS_NAMES = {"0x0200": "Ethernet", "0x0207": "InfiniBand"}


def _sysfs_word(host, path):
    return (host.read(path) or "").strip().lower()


def pci_functions(host, kind):
    """[(address, class, driver or None)] of the physical functions of ``kind`` (NVIDIA_GPUS, ...) in sysfs.

    None when /sys/bus/pci/devices cannot be listed (then nothing is concluded from it). SR-IOV virtual
    functions (a ``physfn`` link) are left out: they are handed to VMs and pods by design.
    """
    _what, vendor, classes, devices = kind
    names = host.listdir(PCI_DEVICES)
    if names is None:
        return None
    out = []
    for name in names:
        base = PCI_DEVICES + "/" + name
        if _sysfs_word(host, base + "/vendor") != vendor or host.exists(base + "/physfn"):
            continue
        klass = _sysfs_word(host, base + "/class")
        if klass.startswith(classes) and (devices is None or _sysfs_word(host, base + "/device").startswith(devices)):
            out.append((name, klass, host.realname(base + "/driver")))
    return out


def _pci_key(address):
    """Comparable PCI address: nvidia-smi's '00000000:00:06.0', npu-smi's '0000:C1:00.0', sysfs '0000:c1:00.0'."""
    return (address or "").strip().lower()[-12:]


def unseen_functions(functions, bus_ids):
    """The functions whose address is none of ``bus_ids`` (what the tool lists)."""
    seen = set(_pci_key(bus_id) for bus_id in bus_ids if bus_id)
    return [f for f in functions if _pci_key(f[0]) not in seen]


def unseen_reason(kind, functions, by, why):
    """'2 NVIDIA GPU(s) on the PCI bus that nvidia-smi does not see (why): 0000:00:06.0 (driver nvidia), ...'."""
    def one(address, klass, driver):
        words = [PCI_CLASS_NAMES[klass[:6]]] if klass[:6] in PCI_CLASS_NAMES else []
        return "%s (%s)" % (address, ", ".join(words + ["driver %s" % driver if driver else "no driver"]))
    listed = ", ".join(one(*f) for f in functions[:8]) + (
        " and %d more" % (len(functions) - 8) if len(functions) > 8 else "")
    return "%d %s(s) on the PCI bus %s (%s): %s" % (len(functions), kind[0], by, why, listed)


def _unseen_gpus(pci, why, clock, raw=None):
    """error: NVIDIA GPUs on the PCI bus and an nvidia-smi that is absent or sees none of them."""
    return _record("gpu.inventory", "error", unseen_reason(NVIDIA_GPUS, pci, "that nvidia-smi does not see", why),
                   clock=clock, raw=raw, metrics={"gpu_count": 0, "pci_gpu_count": len(pci)},
                   tool={"name": "nvidia-smi"})


def _absent_gpus(params, reason, clock, raw=None):
    """skip on a CPU node; fail when the user expects GPUs there."""
    want = expectation(params, "gpu_count")
    if want:
        return _record("gpu.inventory", "fail", "%s, but expect.gpu_count is %d" % (reason, want), clock=clock,
                       raw=raw, metrics={"gpu_count": 0}, expect={"gpu_count": {"equals": want}})
    return _record("gpu.inventory", "skip", reason, clock=clock, raw=raw)


class _NoGpu(Exception):
    def __init__(self, message, raw=None):
        super().__init__(message)
        self.raw = raw


def _gpu_query(host, smi, timeout):
    """(data, source, run) from -q -x, else from the --query-gpu CSV."""
    run = host.run([smi, "-q", "-x"], timeout)
    text = run.output
    if "No devices were found" in text:
        raise _NoGpu("nvidia-smi found no GPU (No devices were found)", raw=text)
    first_error = None
    if run.rc == 0:
        try:
            return nvidia_smi.parse_xml(run.stdout), "nvidia-smi -q -x", run
        except ParseError as exc:
            first_error = exc
    else:
        first_error = AcceptanceError("nvidia-smi -q -x exited %d: %s" % (run.rc, (text.strip().splitlines() or [""])[0]),
                                      cmd=[smi, "-q", "-x"], stdout_tail=results.trim(text))
    fields = list(nvidia_smi.QUERY_FIELDS)
    argv = [smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
    csv = host.run(argv, timeout)
    if csv.rc != 0:
        raise AcceptanceError("%s; the --query-gpu fallback exited %d too" % (first_error, csv.rc),
                              cmd=argv, stdout_tail=results.trim(text + "\n" + csv.output))
    try:
        data = nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(csv.stdout, fields))
    except ParseError as exc:
        raise ParseError("%s; the --query-gpu fallback failed too: %s" % (first_error, exc),
                         cmd=argv, stdout_tail=results.trim(csv.output))
    data["fallback_reason"] = str(first_error)
    return data, "nvidia-smi --query-gpu (fallback: %s)" % str(first_error)[:200], csv


def _gpu_inventory(params, data, source, clock, tool, pci=None):
    gpus = data["gpus"]
    models = sorted(set(g["name"] for g in gpus if g["name"]))
    facts = {"driver_version": data.get("driver_version"), "cuda_version": data.get("cuda_version"),
             "gpu_models": models, "gpu_model": models[0] if len(models) == 1 else None, "source": source}
    metrics = {"gpu_count": len(gpus)}
    memories = [g["memory_total_mib"] for g in gpus if g["memory_total_mib"] is not None]
    if memories:
        metrics["gpu_memory_total_min_mib"] = min(memories)
    verdicts, expect = [], {}
    _expect_count(metrics, "gpu_count", expectation(params, "gpu_count"), verdicts, expect)
    wanted = expectation(params, "gpu_model")
    if wanted:
        expect["gpu_model"] = {"contains": wanted}
        odd = ["%s (%s)" % (g["index"], g["name"]) for g in gpus if wanted.lower() not in (g["name"] or "").lower()]
        if odd:
            verdicts.append(("fail", "GPU model does not contain %r on GPU %s" % (wanted, ", ".join(odd))))
    _expect_version("driver_version", data.get("driver_version"), expectation(params, "driver_version"), verdicts, expect)
    _expect_version("cuda_version", data.get("cuda_version"), expectation(params, "cuda_version"), verdicts, expect)
    if not gpus:
        verdicts.append(("fail", "nvidia-smi answered but lists no GPU"))
    if pci is not None:
        metrics["pci_gpu_count"] = len(pci)
        lost = unseen_functions(pci, [g["bus_id"] for g in gpus])
        if len(pci) > len(gpus) and lost:   # (a GPU fallen off the bus (Xid 79), or bound to vfio-pci)
            verdicts.append(("error", unseen_reason(NVIDIA_GPUS, lost, "that nvidia-smi does not see",
                                                    "it lists %d of %d" % (len(gpus), len(pci)))))
    status, reason = _fold(verdicts)
    return _record("gpu.inventory", status, reason, clock=clock, facts=facts, metrics=metrics, expect=expect, tool=tool)


def ecc_verdicts(gpu):
    """The ECC rules of thresholds.GPU_ECC_RULES for one GPU -> [(status, reason)]; the aggregate (lifetime)
    count is judged only while the volatile count is within its rule."""
    rules = thresholds.GPU_ECC_RULES
    vol, agg = gpu.get("ecc_volatile_uncorrectable"), gpu.get("ecc_aggregate_uncorrectable")
    if vol and vol > rules["ecc_volatile_uncorrectable"]["max"]:
        return [(rules["ecc_volatile_uncorrectable"]["status"],
                 "%d volatile uncorrectable ECC errors since the last driver load" % vol)]
    if agg and agg > rules["ecc_aggregate_uncorrectable"]["max"]:
        return [(rules["ecc_aggregate_uncorrectable"]["status"],
                 "%d aggregate (lifetime) uncorrectable ECC errors" % agg)]
    return []


def _pending_service_verdicts(gpu, params):
    """Row remapping and page retirement: failed or waiting for a reset."""
    out = []
    if gpu.get("remapped_rows_failure"):
        out.append(("fail", "row remapping failure occurred (the GPU needs service)"))
    if gpu.get("remapped_rows_pending"):
        out.append(("warn", "row remapping pending: reset the GPU or reboot to apply it"))
    if gpu.get("retired_pages_pending"):
        out.append(("warn", "page retirement pending: reset the GPU or reboot to apply it"))
    return out


def _pcie_width_verdicts(gpu, params):
    cur, top = gpu.get("pcie_width_current"), gpu.get("pcie_width_max")
    if cur is not None and top is not None and cur < top:
        return [("fail", "PCIe link width x%d < x%d maximum (degraded link)" % (cur, top))]
    return []


def _clock_event_verdicts(gpu, params):
    reasons = gpu.get("clocks_event_reasons") or {}
    return [(status, "clocks event reason %s is active" % name)
            for name, status, _source in thresholds.GPU_CLOCK_EVENT_REASONS if reasons.get(name)]


def _ecc_mode_verdicts(gpu, params):
    mode, pending = gpu.get("ecc_mode_current"), gpu.get("ecc_mode_pending")
    if mode == "Disabled":
        return [("warn", "ECC is disabled%s" % (" (Enabled pending a reboot)" if pending == "Enabled" else ""))]
    if mode == "Enabled" and pending == "Disabled":
        return [("warn", "ECC will be disabled at the next reboot (pending Disabled)")]
    return []


def _fabric_verdicts(gpu, params):
    fabric = gpu.get("fabric_state")
    if fabric is not None and fabric != "Completed":
        return [("fail", "NVLink fabric state is %s (status %s): fabric manager has not finished"
                         % (fabric, gpu.get("fabric_status")))]
    if fabric == "Completed" and gpu.get("fabric_status") not in (None, "Success"):
        return [("fail", "NVLink fabric status is %s" % gpu.get("fabric_status"))]
    return []


def _nvlink_verdicts(gpu, params):
    nvlink = gpu.get("nvlink")
    if nvlink is None:
        return []
    out = []
    down = sorted(k for k, v in nvlink["links"].items() if v is None)
    if down and len(down) < len(nvlink["links"]):
        out.append(("fail", "NVLink degraded: %d of %d links active (inactive: %s)" % (
            len(nvlink["links"]) - len(down), len(nvlink["links"]), ", ".join(str(k) for k in down))))
    speeds = sorted(set(v for v in nvlink["links"].values() if v is not None))
    if len(speeds) > 1:
        out.append(("warn", "NVLink links run at different speeds: %s GB/s" % ", ".join(
            ("%.3f" % s).rstrip("0").rstrip(".") for s in speeds)))
    return out


def _persistence_verdicts(gpu, params):
    want = expectation(params, "persistence_mode")
    if want is not None and gpu.get("persistence_mode") is not None:
        if (gpu["persistence_mode"] == "Enabled") != bool(want):
            return [("fail", "persistence mode is %s, expected %s" % (
                gpu["persistence_mode"], "Enabled" if want else "Disabled"))]
    return []


# gpu_verdicts' rules in the order their reasons are listed: each (gpu, params) -> [(status, reason)]
_GPU_RULES = (_pending_service_verdicts, _pcie_width_verdicts, _clock_event_verdicts, _ecc_mode_verdicts,
              _fabric_verdicts, _nvlink_verdicts, _persistence_verdicts)


def gpu_verdicts(gpu, params=None):
    """Health rules for one GPU model -> [(status, reason)] (documented in docs/env_probe.md)."""
    params = params or {}
    out = []
    out.extend(ecc_verdicts(gpu))
    for rule in _GPU_RULES:
        out.extend(rule(gpu, params))
    return out


def _gpu_device(params, gpu, clock, tool, source):
    metric_keys = (
        ("memory_total_mib", "memory_total_mib"),
        ("ecc_volatile_uncorrectable", "ecc_volatile_uncorrectable_count"),
        ("ecc_volatile_correctable", "ecc_volatile_correctable_count"),
        ("ecc_aggregate_uncorrectable", "ecc_aggregate_uncorrectable_count"),
        ("ecc_aggregate_correctable", "ecc_aggregate_correctable_count"),
        ("retired_pages_single_bit", "retired_pages_single_bit_count"),
        ("retired_pages_double_bit", "retired_pages_double_bit_count"),
        ("remapped_rows_correctable", "remapped_rows_correctable_count"),
        ("remapped_rows_uncorrectable", "remapped_rows_uncorrectable_count"),
        ("pcie_gen_current", "pcie_link_current_gen"), ("pcie_gen_max", "pcie_link_max_gen"),
        ("pcie_width_current", "pcie_link_current_width"), ("pcie_width_max", "pcie_link_max_width"),
        ("temperature_c", "temperature_c"), ("power_draw_w", "power_draw_w"), ("power_limit_w", "power_limit_w"),
    )
    metrics = dict((name, gpu.get(key)) for key, name in metric_keys if gpu.get(key) is not None)
    facts = dict((key, gpu.get(key)) for key in (
        "name", "serial", "uuid", "bus_id", "vbios_version", "persistence_mode", "ecc_mode_current",
        "ecc_mode_pending", "remapped_rows_pending", "remapped_rows_failure", "retired_pages_pending",
        "performance_state", "mig_mode", "fabric_state", "fabric_status", "compute_mode"))
    facts["clocks_event_reasons_active"] = sorted(k for k, v in (gpu.get("clocks_event_reasons") or {}).items() if v)
    nvlink = gpu.get("nvlink")
    if nvlink is not None:
        speeds = [v for v in nvlink["links"].values() if v is not None]
        metrics["nvlink_link_count"] = len(nvlink["links"])
        metrics["nvlink_active_link_count"] = len(speeds)
        if speeds:
            metrics["nvlink_link_speed_min_gbyte_s"] = min(speeds)
        facts["nvlink_inactive_links"] = sorted(k for k, v in nvlink["links"].items() if v is None)
    status, reason = _fold(gpu_verdicts(gpu, params))
    return _record("gpu.device", status, reason, clock=clock, target=str(gpu["index"]), facts=facts,
                   metrics=metrics, tool=tool, params={"source": source})


def _gpu_topology(host, smi, params, data, tool, nvlink_error=None):
    clock = _Clock()
    argv = [smi, "topo", "-m"]
    try:
        run = host.run(argv, params.get("timeout_s", 60))
        if run.rc != 0:
            return [_record("gpu.topology", "error", "nvidia-smi topo -m exited %d" % run.rc, clock=clock,
                            raw=run.output, params={"argv": argv}, tool=tool)]
        topo = nvidia_smi.parse_topo(run.stdout)
    except (AcceptanceError, ParseError) as exc:
        return [_error_from("gpu.topology", exc, clock, tool=tool)]
    peers = nvidia_smi.nvlink_peers(topo)
    affinity = nvidia_smi.gpu_nic_affinity(topo)
    verdicts = []
    if len(topo["gpus"]) != len(data["gpus"]):
        verdicts.append(("warn", "topo -m shows %d GPUs but nvidia-smi -q lists %d" % (
            len(topo["gpus"]), len(data["gpus"]))))
    raw = None
    if nvlink_error:
        verdicts.append(("warn", "NVLink link status unreadable: %s" % nvlink_error[0]))
        raw = nvlink_error[1]
    links = sorted(set(cell for row in peers.values() for cell in row.values()))
    pairs = sum(len(row) for row in peers.values()) // 2
    facts = {"matrix": topo["matrix"], "nic_names": topo["nic_names"], "nvlink_peers": peers,
             "nvlink_link_types": links, "gpu_nic_affinity": affinity,
             "cpu_affinity": dict((g, (topo["affinity"].get(g) or {}).get("cpu_affinity")) for g in topo["gpus"]),
             "numa_affinity": dict((g, (topo["affinity"].get(g) or {}).get("numa_affinity")) for g in topo["gpus"])}
    metrics = {"topo_gpu_count": len(topo["gpus"]), "topo_nic_count": len(topo["nics"]),
               "nvlink_gpu_pair_count": pairs}
    status, reason = _fold(verdicts)
    return [_record("gpu.topology", status, reason, clock=clock, facts=facts, metrics=metrics, tool=tool,
                    params={"argv": argv}, raw=raw)]


# =========================================================================== rdma


def _no_hca_record(params, files, nics, clock):
    """The rdma.inventory record when no RDMA device is listed: error (NICs on the bus), fail (HCAs expected) or skip."""
    reason = "no RDMA device: %s %s" % (IB_CLASS, "is absent" if files is None else "is empty")
    if nics:
        return _record("rdma.inventory", "error", unseen_reason(
            RDMA_NICS, nics, "that %s does not list" % IB_CLASS,
            reason + "; load the RDMA driver stack: mlx5_ib with ib_core and ib_uverbs, RoCE included"),
            clock=clock, metrics={"hca_count": 0, "pci_nic_count": len(nics)})
    if expectation(params, "hca_count"):
        return _record("rdma.inventory", "fail", reason + " but expect.hca_count is %d"
                       % expectation(params, "hca_count"), clock=clock, metrics={"hca_count": 0},
                       expect={"hca_count": {"equals": expectation(params, "hca_count")}})
    return _record("rdma.inventory", "skip", reason, clock=clock)


def _hca_facts(hcas):
    return {"hcas": [h["name"] for h in hcas],
            "fw_versions": dict((h["name"], h["fw_ver"]) for h in hcas),
            "device_ids": sorted(set(h["device_id"] for h in hcas if h["device_id"])),
            "vendor_ids": sorted(set(h["vendor_id"] for h in hcas if h["vendor_id"])),
            "board_ids": sorted(set(h["board_id"] for h in hcas if h["board_id"]))}


def _hca_inventory_verdicts(host, params, hcas, nics, metrics):
    """(verdicts, expect) of rdma.inventory: the expected HCA count and NICs on the bus without an RDMA device.

    Adds pci_nic_count to ``metrics`` when the PCI bus was readable.
    """
    verdicts, expect = [], {}
    _expect_count(metrics, "hca_count", expectation(params, "hca_count"), verdicts, expect)
    if nics is not None:
        metrics["pci_nic_count"] = len(nics)
        lost = [f for f in unseen_functions(nics, [h["pci_address"] for h in hcas]) if not _bond_slave(host, f[0])]
        if lost:
            verdicts.append(("error", unseen_reason(RDMA_NICS, lost, "that %s does not list" % IB_CLASS,
                                                    "it lists %s" % ", ".join(h["name"] for h in hcas))))
    return verdicts, expect


def probe_rdma(host, params):
    clock = _Clock()
    try:
        files = read_infiniband(host)
        hcas = rdma.build_hcas(files) if files else []
    except (AcceptanceError, ParseError) as exc:
        return [_error_from("rdma.inventory", exc, clock)]
    nics = pci_functions(host, RDMA_NICS)
    if not hcas:
        return [_no_hca_record(params, files, nics, clock)]
    ports = [(h, p) for h in hcas for p in h["ports"]]
    active = [1 for _h, p in ports if p["state"] == "ACTIVE"]
    facts = _hca_facts(hcas)
    metrics = {"hca_count": len(hcas), "port_count": len(ports), "active_port_count": len(active)}
    verdicts, expect = _hca_inventory_verdicts(host, params, hcas, nics, metrics)
    status, reason = _fold(verdicts)
    out = [_record("rdma.inventory", status, reason, clock=clock, facts=facts, metrics=metrics, expect=expect)]
    links = dict((h["name"], hca_pci_link(read_hca_pci_link(host, h["name"]))) for h in hcas)
    for hca, port in ports:
        out.append(_rdma_port(params, hca, port, _Clock(), links[hca["name"]]))
    return out


def read_hca_pci_link(host, name):
    """{attribute: text or None} of the PCI link of an RDMA device: PCI_LINK_FILES under <hca>/device, and
    ``upstream_max_link_{speed,width}`` of the port above it (the parent directory of the resolved PCI function,
    when that is a PCI function itself: not for a function on a root bus, e.g. in a VM)."""
    files = dict((attr, host.read("%s/%s/device/%s" % (IB_CLASS, name, attr))) for attr in PCI_LINK_FILES)
    real = host.realpath("%s/%s/device" % (IB_CLASS, name))
    parent = os.path.dirname(real) if real else ""
    if _PCI_FUNCTION_RE.match(os.path.basename(parent)):
        for attr in PCI_UPSTREAM_FILES:
            files["upstream_" + attr] = host.read("%s/%s" % (parent, attr))
    return files


def pcie_gen(text):
    """PCIe generation of a sysfs link speed ("32.0 GT/s PCIe" -> 5), None when absent, unknown or unreadable."""
    match = _PCIE_SPEED_RE.match((text or "").strip())
    return PCIE_GEN_BY_GT_S.get(float(match.group(1))) if match else None


def pcie_width(text):
    """Lane count of a sysfs link width ("16" -> 16); None when absent, unreadable or 0 (no link trained)."""
    text = (text or "").strip()
    return (int(text) or None) if _PCIE_WIDTH_RE.match(text) else None


def hca_pci_link(files):
    """The rdma.port metrics of an HCA's PCI link, only those readable: pcie_link_{current,max}_{gen,width} (the
    card's), pcie_link_upstream_max_{gen,width} (the port above it) and pcie_link_effective_max_{gen,width}: what
    the link can reach, the lower of the card's and the upstream port's maximum (the card's alone where the port's
    is not readable; absent where the card's is not)."""
    out = {}
    for when in ("current", "max", "upstream_max"):
        prefix = "upstream_" if when == "upstream_max" else ""
        gen = pcie_gen(files.get(prefix + ("max" if prefix else when) + "_link_speed"))
        width = pcie_width(files.get(prefix + ("max" if prefix else when) + "_link_width"))
        if gen is not None:
            out["pcie_link_%s_gen" % when] = gen
        if width is not None:
            out["pcie_link_%s_width" % when] = width
    for kind in ("gen", "width"):
        card, port = out.get("pcie_link_max_" + kind), out.get("pcie_link_upstream_max_" + kind)
        if card is not None:
            out["pcie_link_effective_max_" + kind] = min(card, port) if port is not None else card
    return out


def hca_pci_link_verdicts(link):
    """A link trained below what it can reach (pcie_link_effective_max_*): a slower or narrower link than both
    ends support is a fault (a loose or damaged riser or slot, a card not seated, a retrained link): warn. An x16
    card in an x8 slot trains at x8 by design and does not warn. Nothing is judged on a missing figure."""
    low = []
    for kind, text in (("gen", "gen%d"), ("width", "x%d")):
        cur, top = link.get("pcie_link_current_" + kind), link.get("pcie_link_effective_max_" + kind)
        if cur is not None and top is not None and cur < top:
            basis = "the card's max (upstream port's not read)"
            if "pcie_link_upstream_max_" + kind in link:
                basis = "the lower max of the card (%s) and its upstream port (%s)" % (
                    text % link["pcie_link_max_" + kind], text % link["pcie_link_upstream_max_" + kind])
            low.append("%s below %s, %s" % (text % cur, text % top, basis))
    if not low:
        return []
    return [("warn", "HCA PCIe link trained %s: a degraded link (riser, slot, seating)" % "; ".join(low))]


def _bond_slave(host, address):
    """True when a netdev of the PCI function is a bond's slave: with RoCE LAG one RDMA device (mlx5_bond_N)
    stands for the ports of both functions, and the second function has none of its own."""
    base = "%s/%s/net" % (PCI_DEVICES, address)
    return any(host.exists("%s/%s/master" % (base, ifname)) for ifname in host.listdir(base) or [])


def port_verdicts(port, params=None):
    """Rules for one HCA port -> [(status, reason)] (documented in docs/env_probe.md)."""
    params = params or {}
    out = []
    up = port["state"] == "ACTIVE" and (port["phys_state"] in (None, "LinkUp"))
    if not up:
        strict = bool(expectation(params, "ports_up"))
        note = "" if strict else " (not judged as a failure: expect.ports_up is false)"
        if port["state"] == "INIT" and port["phys_state"] == "LinkUp" and port["link_layer"] == "InfiniBand":
            note = ": the link is up but no subnet manager has configured the port" + note
        out.append(("fail" if strict else "warn", "port is %s/%s%s" % (port["state"], port["phys_state"], note)))
    want = expectation(params, "port_rate_gbit_s")
    if up and want is not None:
        if port["rate_gbit_s"] is None:
            out.append(("error", "port rate is unreadable (%s)" % port.get("rate")))
        elif port["rate_gbit_s"] < want:
            out.append(("fail", "port rate %s Gbit/s < %s Gbit/s expected" % (
                _num(port["rate_gbit_s"]), _num(want))))
    if up and port["link_layer"] == "Ethernet":
        v2 = [g for g in port["gids"] if g["type"] == "RoCE v2" and g["ipv4"]]
        if not v2:
            out.append(("warn", "RoCE port has no RoCE v2 GID with an IPv4 address (NCCL/perftest need one: "
                                "is an IPv4 address configured on its netdev?)"))
    return out


def _num(value):
    return ("%.1f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _rdma_port(params, hca, port, clock, link=None):
    target = "%s/%d" % (hca["name"], port["port"])
    v2_ipv4 = [g for g in port["gids"] if g["type"] == "RoCE v2" and g["ipv4"]]
    facts = {
        "state": port["state"], "phys_state": port["phys_state"], "link_layer": port["link_layer"],
        "rate": port["rate"], "netdevs": port["netdevs"],
        "netdev": port["netdevs"][0]["name"] if port["netdevs"] else None,
        "fw_ver": hca["fw_ver"], "node_guid": hca["node_guid"], "board_id": hca["board_id"],
        "hca_type": hca["hca_type"], "vendor_id": hca["vendor_id"], "device_id": hca["device_id"],
        "pci_address": hca["pci_address"], "gids": port["gids"],
        "roce_v2_ipv4_gid_index": v2_ipv4[0]["index"] if v2_ipv4 else None,
    }
    metrics = {"gid_count": len(port["gids"]),
               "roce_v2_gid_count": sum(1 for g in port["gids"] if g["type"] == "RoCE v2")}
    if port["rate_gbit_s"] is not None:
        metrics["rate_gbit_s"] = port["rate_gbit_s"]
    metrics.update(link or {})
    expect = {}
    if expectation(params, "port_rate_gbit_s") is not None:
        expect["rate_gbit_s"] = {"min": expectation(params, "port_rate_gbit_s")}
    if expectation(params, "ports_up"):
        expect["state"] = {"equals": "ACTIVE"}
    status, reason = _fold(port_verdicts(port, params) + hca_pci_link_verdicts(link or {}))
    return _record("rdma.port", status, reason, clock=clock, target=target, facts=facts, metrics=metrics,
                   expect=expect)


# =========================================================================== npu (Ascend)

def cann_version(host):
    """(install info dict, path) of the CANN toolkit (ASCEND_TOOLKIT_HOME first, then CANN_DIRS), or ({}, None)."""
    bases = []
    home = host.getenv("ASCEND_TOOLKIT_HOME")
    if home:
        bases.append(home)
    bases.extend(CANN_DIRS)
    for base in bases:
        for name in sorted(host.listdir(base) or []):
            path = "%s/%s/ascend_toolkit_install.info" % (base, name)
            if name.endswith("-linux") and host.exists(path):
                return npu_smi.parse_install_info(host.read(path) or ""), path
    return {}, None


def npu_verdicts(npu):
    """Health rule of one NPU -> [(status, reason)] (npu-smi's own health word)."""
    health = npu.get("health")
    if health in (None, "OK"):
        return []
    return [("warn" if health in thresholds.NPU_HEALTH["warn"] else "fail", "npu-smi health is %s" % health)]


def _no_npu_smi_record(pci, clock, want=None):
    """gpu.npu_inventory without npu-smi: error when Ascend NPUs are on the PCI bus, fail when ``want`` (the
    expected NPU count) is more than 0, else skip."""
    if pci:
        return _record("gpu.npu_inventory", "error", unseen_reason(
            ASCEND_NPUS, pci, "that npu-smi does not see", "npu-smi not found on PATH: install the Ascend driver"),
            clock=clock, metrics={"npu_count": 0, "pci_npu_count": len(pci)}, tool={"name": "npu-smi"})
    if want:
        return _record("gpu.npu_inventory", "fail", "no Ascend NPU: npu-smi not found, but expect.npu_count is %d"
                       % want, clock=clock, metrics={"npu_count": 0}, expect={"npu_count": {"equals": want}})
    return _record("gpu.npu_inventory", "skip", "no Ascend NPU: npu-smi not found", clock=clock)


def _npu_inventory_verdicts(data, pci, metrics):
    """[(status, reason)] of gpu.npu_inventory: no NPU listed, npu-smi's problems, NPUs on the bus it does not see.

    Adds pci_npu_count to ``metrics`` when the PCI bus was readable.
    """
    npus = data["npus"]
    verdicts = []
    if not npus:
        verdicts.append(("error", "npu-smi info lists no NPU%s" % (
            " (%s)" % data["problems"][0] if data["problems"] else "")))
    elif data["problems"]:
        verdicts.append(("warn", "npu-smi info: %s" % data["problems"][0]))
    if pci is not None:
        metrics["pci_npu_count"] = len(pci)
        lost = unseen_functions(pci, [n.get("bus_id") for n in npus])
        if len(pci) > len(npus) and lost:
            verdicts.append(("error", unseen_reason(ASCEND_NPUS, lost, "that npu-smi does not see",
                                                    "it lists %d of %d" % (len(npus), len(pci)))))
    return verdicts


def _npu_device(npu, tool):
    """The gpu.npu_device record of one NPU."""
    metrics = dict((name, npu.get(key)) for key, name in (
        ("temp_c", "temperature_c"), ("power_w", "power_draw_w"), ("aicore_pct", "aicore_util_pct"),
        ("hbm_total_mb", "hbm_total_mib"), ("hbm_used_mb", "hbm_used_mib"),
        ("memory_total_mb", "memory_total_mib"), ("memory_used_mb", "memory_used_mib")) if npu.get(key) is not None)
    facts = dict((key, npu.get(key)) for key in ("name", "health", "bus_id", "chip", "device"))
    status, reason = _fold(npu_verdicts(npu))
    return _record("gpu.npu_device", status, reason, clock=_Clock(), target=str(npu["npu"]), facts=facts,
                   metrics=metrics, tool=tool)


def probe_npu(host, params):
    """gpu.npu_inventory (+ gpu.npu_device per NPU) from `npu-smi info`, gpu.npu_network per NPU from hccn_tool;
    skip where there is no npu-smi."""
    clock = _Clock()
    explicit = params.get("npu_smi_path")
    smi = explicit or host.which("npu-smi")
    pci = pci_functions(host, ASCEND_NPUS)
    if not smi:
        return [_no_npu_smi_record(pci, clock, expectation(params, "npu_count"))]
    argv = [smi, "info"]
    run = host.run(argv, params.get("timeout_s", 60))
    tool = {"name": "npu-smi"}
    if run.rc != 0:
        return [_record("gpu.npu_inventory", "error", "npu-smi info exited %d: %s" % (
            run.rc, (run.output.strip().splitlines() or [""])[0][:200]), clock=clock, raw=run.output, tool=tool,
            params={"argv": argv})]
    data = npu_smi.parse_info(run.stdout)
    if data["version"]:
        tool["version"] = data["version"]
    cann, cann_path = cann_version(host)
    npus = data["npus"]
    models = sorted(set(n["name"] for n in npus if n.get("name")))
    facts = {"driver_version": data["version"], "cann_version": cann.get("version"), "cann_arch": cann.get("arch"),
             "cann_install_info": cann_path, "npu_models": models, "npu_model": models[0] if len(models) == 1 else None}
    metrics = {"npu_count": len(npus)}
    hbm = [n["hbm_total_mb"] for n in npus if n.get("hbm_total_mb")]
    if hbm:
        metrics["npu_hbm_total_min_mib"] = min(hbm)
    verdicts, expect = _npu_inventory_verdicts(data, pci, metrics), {}
    _expect_count(metrics, "npu_count", expectation(params, "npu_count"), verdicts, expect)
    status, reason = _fold(verdicts)
    out = [_record("gpu.npu_inventory", status, reason, clock=clock, facts=facts, metrics=metrics, tool=tool,
                   params={"argv": argv}, raw=run.output if status != "pass" else None, expect=expect)]
    for npu in npus:
        out.append(_npu_device(npu, tool))
    if npus:
        out.extend(probe_npu_network(host, params, npus))
    return out


def hccn_tool_path(host):
    """hccn_tool's path to run: PATH first, then where the Ascend driver installs it (HCCN_TOOL_PATHS), either one
    passing the path rule (Host.trusted_exec; StateError otherwise); None when absent."""
    found = host.which("hccn_tool") or next((path for path in HCCN_TOOL_PATHS if host.exists(path)), None)
    return host.trusted_exec(found, "hccn_tool") if found else None


# (hccn_tool option, parser, required): a device whose link or address cannot be read is an error; the gateway
# and the LLDP neighbour are read where available (a port without either is not a fault by itself)
HCCN_QUERIES = (("-link", hccn_tool.parse_link, True), ("-ip", hccn_tool.parse_ip, True),
                ("-gateway", hccn_tool.parse_gateway, False), ("-lldp", hccn_tool.parse_lldp, False))
LLDP_FACTS = (("port_id", "lldp_port_id"), ("system_name", "lldp_system_name"),
              ("system_description", "lldp_system_description"), ("mgmt_ipv4", "lldp_mgmt_ipv4"),
              ("chassis_id", "lldp_chassis_id"), ("max_frame_size", "lldp_max_frame_size"))


def npu_network_verdicts(facts):
    """Rule of one NPU's RoCE port -> [(status, reason)]: link UP and an IPv4 address pass; DOWN fails."""
    link = facts.get("link_status")
    if link == "DOWN":
        return [("fail", "RoCE link of NPU device %s is DOWN (hccn_tool -link -g)" % facts.get("device_id"))]
    if link != "UP":
        return [("warn", "RoCE link of NPU device %s reports %r (hccn_tool -link -g)" % (facts.get("device_id"), link))]
    return []


def npu_device_id(npu):
    """The id ``hccn_tool -i`` takes for an NPU of ``npu-smi info``: its Device column where printed, else the NPU id."""
    return npu.get("device") if npu.get("device") is not None else npu.get("npu")


def probe_npu_network(host, params, npus):
    """gpu.npu_network per NPU device: hccn_tool's view of its RoCE port (link, IPv4 address, netmask, gateway, LLDP
    neighbour). One ``skip`` record where hccn_tool is absent (NPUs without RoCE ports, such as 310B boards)."""
    try:
        tool_path = hccn_tool_path(host)
    except statedir.StateError as exc:      # root runs only what root could have written alone
        return [_record("gpu.npu_network", "error", "hccn_tool not run: %s" % exc, clock=_Clock())]
    if not tool_path:
        return [_record("gpu.npu_network", "skip", "hccn_tool not found (PATH, %s): no NPU RoCE port facts"
                        % ", ".join(HCCN_TOOL_PATHS), clock=_Clock())]
    timeout = params.get("timeout_s", 60)
    out = []
    for npu in npus:
        device = npu_device_id(npu)
        clock = _Clock()
        facts = {"device_id": device}
        verdicts = []
        raws = []
        argvs = []
        unavailable = []
        for option, parse, required in HCCN_QUERIES:
            argv = [tool_path, "-i", str(device), option, "-g"]
            argvs.append(argv)
            command = "hccn_tool -i %s %s -g" % (device, option)
            try:
                run = host.run(argv, timeout)
            except AcceptanceError as exc:      # a timeout of one query costs that query only
                if required:
                    verdicts.append(("error", "%s: %s" % (command, exc)))
                else:
                    unavailable.append("%s: %s" % (command, exc))
                continue
            text = run.output
            if run.rc != 0:
                why = "%s exited %d: %s" % (command, run.rc, (text.strip().splitlines() or [""])[0][:200])
                if required:
                    verdicts.append(("error", why))
                    raws.append(text)
                else:
                    unavailable.append(why)
                continue
            parsed = parse(run.stdout or "")
            if option == "-lldp":
                facts["lldp_neighbor"] = parsed["neighbor"]
                facts.update((name, parsed[key]) for key, name in LLDP_FACTS)
            else:
                facts.update((key, value) for key, value in parsed.items() if key != "problems")
            if parsed["problems"]:
                why = "%s: %s" % (command, parsed["problems"][0])
                if required:
                    verdicts.append(("error", "could not read %s" % why))
                    raws.append(text)
                else:
                    unavailable.append(why)
        if unavailable:
            facts["unavailable"] = unavailable
        if not any(v[0] == "error" for v in verdicts):
            if facts.get("ipaddr") is None:
                verdicts.append(("error", "hccn_tool -i %s -ip -g printed no IPv4 address" % device))
            verdicts.extend(npu_network_verdicts(facts))
        status, reason = _fold(verdicts)
        out.append(_record("gpu.npu_network", status, reason, clock=clock, target=str(device), facts=facts,
                           tool={"name": "hccn_tool"}, params={"argv": argvs},
                           raw="\n".join(raws) if raws else None))
    return out


# =========================================================================== entry


def probe(host, params):
    """Run the requested groups; returns the list of records (never raises for a node's state)."""
    groups = params.get("groups") or list(GROUPS)
    out = []
    for group, func in (("env", probe_env), ("software", probe_software), ("gpu", probe_gpu), ("npu", probe_npu),
                        ("rdma", probe_rdma)):
        if group not in groups:
            continue
        clock = _Clock()
        check = "%s.probe" % {"software": "env", "npu": "gpu"}.get(group, group)
        try:
            records = func(host, params)
        except (AcceptanceError, ParseError) as exc:
            records = [_error_from(check, exc, clock)]
        except Exception as exc:  # pylint: disable=broad-exception-caught
            # A bug in one probe group must not cost the records of the others: this is the
            # group boundary; the record keeps the traceback for the bug report.
            records = [_record(check, "error", "internal error in the %s probe (%s: %s); please report it"
                               % (group, type(exc).__name__, exc), clock=clock, raw=traceback.format_exc())]
        # the env group notes per check (probe_env); here the records of a group share what the group read
        out.extend(_with_decode_notes(host, records))
    return out
